"""pg_bench_sizes, the sizes of pg-bench's Python scripts: the formatter prints
what pg-bench prints, the parser reads what pg-bench's -b/-e read, the two
agree, and a wrong size is refused (by the module, and by pg-bench-ratios as
a usage error). The scripts find the module in their own folder, in the source
tree and under their installed names. With a pg-bench command after it, the
same sizes are also given to pg-bench itself, which must read and print each
the same way.

    test_sizes.py TOOLS_DIR [PG_BENCH_COMMAND...]   (TOOLS_DIR: tools/pg-bench;
        the command: launcher, pg-bench and the launcher's flags after it)
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile

tools = os.path.abspath(sys.argv[1])
pg_bench = sys.argv[2:]
sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, tools)
from pg_bench_sizes import SIZE_MAX, human_bytes, parse_size, size_arg  # noqa: E402

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


# Printed as pg-bench's human_bytes (options.cpp) prints them.
for nbytes, text in [(0, "0 B"), (8, "8 B"), (1000, "1000 B"), (1023, "1023 B"), (1536, "1536 B"),
                     (3000, "3000 B"), (1024, "1 KiB"), (4096, "4 KiB"), (3 << 10, "3 KiB"),
                     ((1 << 20) + 1024, "1025 KiB"), (64 << 20, "64 MiB"), (1 << 30, "1 GiB"),
                     (1536 << 20, "1536 MiB"), (1 << 40, "1 TiB"), (1 << 50, "1024 TiB")]:
    check(human_bytes(nbytes) == text, f"human_bytes({nbytes}) = {human_bytes(nbytes)!r}, not {text!r}")

# Read as pg-bench's parse_size reads them.
ACCEPTED = [("0", 0), ("8", 8), ("8B", 8), ("8b", 8), ("4K", 4096), ("4k", 4096), ("4KB", 4096), ("4kb", 4096),
            ("4KiB", 4096), ("4kiB", 4096), ("4Kib", 4096), ("256M", 256 << 20), ("256MiB", 256 << 20),
            ("1G", 1 << 30), ("1g", 1 << 30), ("1GB", 1 << 30), ("0010K", 10 << 10),
            (str(SIZE_MAX), SIZE_MAX), (f"{SIZE_MAX >> 30}G", (SIZE_MAX >> 30) << 30)]
for text, nbytes in ACCEPTED:
    try:
        got = parse_size(text)
        check(got == nbytes, f"parse_size({text!r}) = {got}, not {nbytes}")
    except ValueError as e:
        failures.append(f"parse_size({text!r}) refused: {e}")

# Round trip: every size the parser's units reach is printed as a name that
# reads back (without its space: pg-bench's -b takes "4KiB", not "4 KiB"), and
# every name printed for a parsed size reads back to the same size.
sizes = {0, 1, 7, 1000, 3000, SIZE_MAX >> 30}
for shift in range(0, 40):
    for mult in (1, 3, 5, 1000, 1023, 1025):
        sizes.add(mult << shift)
for nbytes in sorted(sizes):
    name = human_bytes(nbytes)
    if name.endswith(" TiB"):
        continue  # pg-bench prints TiB but, like its -b/-e, the parser takes no T
    try:
        back = parse_size(name.replace(" ", ""))
        check(back == nbytes, f"{nbytes} -> {name!r} -> {back}")
    except ValueError as e:
        failures.append(f"{nbytes} -> {name!r}, refused: {e}")
for text in ["8", "4K", "4KiB", "3000", "1536K", "64M", "256MiB", "1G", "1023G"]:
    nbytes = parse_size(text)
    check(parse_size(human_bytes(nbytes).replace(" ", "")) == nbytes, f"{text!r} -> {human_bytes(nbytes)!r}")

# Refused, as pg-bench refuses them ("10X": its own bad-size test).
REFUSED = ["10X", "", "K", "B", "KiB", "4 K", "4 KiB", " 4K", "4K ", "-4", "+4", "4.5M", "1e6", "0x10",
           "4KiBB", "4KIB", "4kIB", "4iB", "4ib", "4BB", "4bB", "1T", "1TiB", "4MM", "4KM",
           "\u0664", "4\u0664K",  # digits of another script
           str(SIZE_MAX + 1), f"{(SIZE_MAX >> 10) + 1}K", f"{(SIZE_MAX >> 30) + 1}G"]
for text in REFUSED:
    try:
        got = parse_size(text)
        failures.append(f"parse_size({text!r}) = {got}, not refused")
    except ValueError as e:
        check(repr(text)[1:-1] in str(e) or text in str(e), f"parse_size({text!r}): message {e} names no value")
for value in [4096, None, b"4K"]:
    try:
        parse_size(value)
        failures.append(f"parse_size({value!r}) not refused")
    except ValueError:
        pass
for value in [-1, 1.5, "8"]:
    try:
        human_bytes(value)
        failures.append(f"human_bytes({value!r}) not refused")
    except (ValueError, TypeError):
        pass
try:
    size_arg("10X")
    failures.append("size_arg('10X') not refused")
except argparse.ArgumentTypeError as e:
    check("'10X'" in str(e), f"size_arg('10X'): {e}")

# The scripts import the module from their own folder: in the source tree, and
# under their installed names next to it (as tools/pg-bench/CMakeLists.txt
# installs them). A wrong --min is a usage error (exit 2) naming the value.
with tempfile.TemporaryDirectory() as bindir:
    shutil.copy(os.path.join(tools, "ratios.py"), os.path.join(bindir, "pg-bench-ratios"))
    shutil.copy(os.path.join(tools, "plot.py"), os.path.join(bindir, "pg-bench-plot"))
    shutil.copy(os.path.join(tools, "pg_bench_sizes.py"), bindir)
    for script in [os.path.join(tools, "ratios.py"), os.path.join(bindir, "pg-bench-ratios")]:
        run = subprocess.run([sys.executable, "-B", script, "no.csv", "--min", "10X"], capture_output=True, text=True,
                             cwd=bindir)
        check(run.returncode == 2 and "bad size '10X'" in run.stderr,
              f"{script} --min 10X: exit {run.returncode}, {run.stderr.strip()!r}")
    for script in [os.path.join(tools, "plot.py"), os.path.join(bindir, "pg-bench-plot")]:
        run = subprocess.run([sys.executable, "-B", script, "--help"], capture_output=True, text=True, cwd=bindir)
        check(run.returncode == 0, f"{script} --help: exit {run.returncode}, {run.stderr.strip()!r}")

# pg-bench itself: each size above given to its -b (with -e 0: the message
# then names the bytes it read, or the value it refused), and sizes printed in
# its header (the sweep stops after -b: the next step is past -e).
if pg_bench:
    def pg_bench_reads(text):
        run = subprocess.run(pg_bench + [f"--minbytes={text}", "--maxbytes=0"], capture_output=True,
                             text=True, errors="replace", timeout=60)
        if "bad value 0 for -b" in run.stderr:
            return 0
        m = re.search(r"-b \((\d+)\) is larger than -e \(0\)", run.stderr)
        if m:
            return int(m.group(1))
        if re.search(r"bad value '.*' for --minbytes", run.stderr):
            return None
        failures.append(f"pg-bench -b {text!r}: unexpected answer, exit {run.returncode}: {run.stderr.strip()!r}")
        return "?"

    def ours(text):
        try:
            return parse_size(text)
        except ValueError:
            return None

    # Several jobs at once: most end at once, but a launcher may take seconds
    # to close a job whose process failed (Open MPI's about 2 s).
    texts = [t for t, _ in ACCEPTED] + REFUSED
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(pg_bench_reads, texts))
    for text, theirs in zip(texts, answers):
        check(theirs in (ours(text), "?"), f"-b {text!r}: pg-bench reads {theirs}, parse_size {ours(text)}")
    for low, high in [(3000, 1536 << 20), (1536 << 10, 1 << 40), (1024, 1000 << 20), (1, 1023 << 30)]:
        args = ["-b", str(low), "-e", str(high), "-f", str(1 << 20), "-n", "1", "-w", "0", "-c", "0",
                "-B", "mpi-raw", "-C", "allreduce"]
        run = subprocess.run(pg_bench + args, capture_output=True, text=True, timeout=60)
        m = re.search(r"sizes (.+?) to (.+?) \(x", run.stdout)
        theirs = m.groups() if m else None
        ours = (human_bytes(low), human_bytes(high))
        check(theirs == ours, f"pg-bench {' '.join(args)}: header sizes {theirs}, human_bytes {ours}"
                              + ("" if m else f", exit {run.returncode}: {run.stderr.strip()!r}"))

for f in failures:
    print("FAILED:", f)
print(f"pg_bench_sizes: {len(failures)} failures")
sys.exit(1 if failures else 0)
