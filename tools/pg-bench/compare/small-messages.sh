#!/usr/bin/env bash
# fairring's small and mid-size allreduce against every MPI a user could pick
# instead, on one node: Debian's MPICH 4.0.2 (the build's), MPICH 5.0.2, Open
# MPI 5.0.11 and Intel MPI 2021.19 (from PyPI, mpis.sh; Intel MPI on shared
# memory only), and the machine's bound (pg-bench --bound: an allreduce's data
# movement in shared memory, copies and flag rounds only, measured in each
# run). allreduce float32, 8 B - 4 MiB, time per call, medians over
# repetitions, out of place and in place.
#
#   tools/pg-bench/compare/small-messages.sh [BUILD_DIR] [RANKS] [REPS]   (defaults: build, 2, 5)
#
# pg-bench, built against Debian's MPICH, runs under Debian's, MPICH 5's and
# Intel MPI's mpiexec, so its mpi-raw row is that MPI's MPI_Allreduce, measured
# in the same run as fairring and the mpi backend on top of it; each ratio in
# the table is of one run's rows. Open MPI (another ABI) runs allreduce_loop.c,
# built with its own mpicc: its calls run back to back, without pg-bench's
# barrier before each, which makes small calls look faster (MPICH 4.0.2: 1.05
# us at 8 B in the loop, 1.30 us in pg-bench). Results: .mpis/small/, a table
# at the end and, where Python has matplotlib, a plot of time against size
# (small-messages-npRANKS.png). A ratio marked * was taken while the
# machine's own bound, measured in the same run, moved by more than a third:
# the machine changed speed during it. Under the table: each run's bound at
# 8 B, and fairring's plan in each run (what its probes chose, and why).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../.."
source "$here/mpis.sh" "${1:-build}" "${2:-2}"
reps=${3:-5}
out=$work/small
mkdir -p "$out"

sweep=(-b 8 -e 4M -f 2 -n 200 -w 20 -r "$reps" -c 0 -B fairring,mpi,mpi-raw,bound)
echo "== pg-bench on Debian's MPICH 4.0.2, $ranks ranks"
mpiexec -n "$ranks" "$pgbench" "${sweep[@]}" --csv "$out/mpich4-np$ranks.csv" | tee "$out/mpich4-np$ranks.txt" |
  grep -E '^ +[0-9]' || true
echo "== pg-bench on MPICH 5.0.2, $ranks ranks"
"${mpich5_env[@]}" "$work/mpich/bin/mpiexec" -n "$ranks" "$pgbench" "${sweep[@]}" --csv "$out/mpich5-np$ranks.csv" \
  2>/dev/null | tee "$out/mpich5-np$ranks.txt" | grep -E '^ +[0-9]' || true
echo "== pg-bench on Intel MPI 2021.19, $ranks ranks"
"${impi_env[@]}" "$work/impi/bin/mpiexec" -n "$ranks" "$pgbench" "${sweep[@]}" --csv "$out/impi-np$ranks.csv" |
  tee "$out/impi-np$ranks.txt" | grep -E '^ +[0-9]' || true
echo "== MPI_Allreduce loop on Open MPI 5.0.11, $ranks ranks"
"${ompi_env[@]}" "$work/openmpi/bin/mpicc" -O2 "$here/allreduce_loop.c" -o "$out/loop-openmpi"
"${ompi_env[@]}" "$work/openmpi/bin/mpiexec" -n "$ranks" "$out/loop-openmpi" 200 "$reps" 8 $((4 << 20)) 2 |
  tee "$out/openmpi-np$ranks.txt"

echo "== summary: median time (us) per size, out of place / in place"
python3 - "$out" "$here/.." "$ranks" <<'PY'
import csv, statistics, sys
from collections import defaultdict
out, tools, ranks = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, tools)
from pg_bench_sizes import human_bytes
mpis = {"mpich4": "MPICH 4.0.2", "mpich5": "MPICH 5.0.2", "impi": "Intel MPI 2021.19"}
# t[mpi][backend][(bytes, in_place)] = times; ratios are taken within one mpi's runs.
t = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
for mpi in mpis:
    with open(f"{out}/{mpi}-np{ranks}.csv", newline="") as f:
        for row in csv.DictReader(f):
            t[mpi][row["backend"]][(int(row["bytes"]), int(row["in_place"]))].append(float(row["time_us"]))
med = {m: {b: {k: statistics.median(v) for k, v in d.items()} for b, d in bs.items()} for m, bs in t.items()}
ompi = {}
for line in open(f"{out}/openmpi-np{ranks}.txt"):
    if not line.startswith("#"):
        b, oop, ip, _, _ = line.split()
        ompi[(int(b), 0)], ompi[(int(b), 1)] = float(oop), float(ip)
sizes = sorted({k[0] for k in med["mpich4"]["mpi-raw"]})
both = lambda f: " / ".join(f(ip) for ip in (0, 1))
# The bound and fairring x bound: from the runs on Debian's MPICH (the bound uses no MPI while it is timed).
bound = med["mpich4"].get("bound", {})
# A ratio whose run saw its own bound (the machine's data movement, measured
# beside fairring in every repetition) spread by more than a third at that size
# was taken while the machine changed speed: marked, to be rerun.
def moved(m, b, ip):
    times = t[m].get("bound", {}).get((b, ip), [])
    return "*" if len(times) > 1 and max(times) > 4 / 3 * min(times) else ""
print("| bytes | fairring | " + " | ".join(mpis.values()) +
      " | Open MPI 5.0.11 (loop) | bound | fairring x bound | fairring / Intel MPI | fairring / MPICH 4.0.2 |")
print("| ---: |" + " ---: |" * 10)
for b in sizes:
    time = lambda table: both(lambda ip: f"{table[(b, ip)]:.2f}" if (b, ip) in table else "-")
    ratio = lambda m: both(lambda ip: f"{med[m]['fairring'][(b, ip)] / med[m]['mpi-raw'][(b, ip)]:.2f}" + moved(m, b, ip))
    over_bound = both(lambda ip: f"{med['mpich4']['fairring'][(b, ip)] / bound[(b, ip)]:.2f}" + moved("mpich4", b, ip)
                      if (b, ip) in bound else "-")
    cells = [time(med["mpich4"]["fairring"])] + [time(med[m]["mpi-raw"]) for m in mpis] + [time(ompi), time(bound)]
    print(f"| {human_bytes(b)} | " + " | ".join(cells) + f" | {over_bound} | {ratio('impi')} | {ratio('mpich4')} |")
# The bound's smallest row is the machine's round trip between two cores: it
# tells which state each run found the machine in.
print("\nthe bound at 8 B (a flag round between the cores), median of each run: " +
      ", ".join(f"{name} {med[m]['bound'][(8, 0)]:.2f} us" for m, name in mpis.items()
                if (8, 0) in med[m].get("bound", {})))
# What fairring's probes chose in each run (its strategy is made anew in each):
# on a new CPU, the first thing to read beside the table.
print("\nfairring's plan in each run (pg_strategy_describe):")
for m, name in mpis.items():
    plans = [line.split("fairring plan: ", 1)[1].strip() for line in open(f"{out}/{m}-np{ranks}.txt")
             if line.startswith("# backend fairring:") and "fairring plan: " in line]
    print(f"- under {name}: " + (plans[0] if plans else "(not in its output)"))
if any(moved(m, b, ip) for m in ("impi", "mpich4") for b in sizes for ip in (0, 1)):
    print("\n* the run's own bound at that size and placement spread by more than a third over its "
          "repetitions: the machine changed speed during the run (rerun it)")
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit(0)
fig, ax = plt.subplots(figsize=(8, 5))
lines = [("fairring", [med["mpich4"]["fairring"][(b, 0)] for b in sizes])]
lines += [(name, [med[m]["mpi-raw"][(b, 0)] for b in sizes]) for m, name in mpis.items()]
lines += [("Open MPI 5.0.11 (calls back to back)", [ompi.get((b, 0), float("nan")) for b in sizes])]
if bound:
    lines += [("bound (copies and flag rounds)", [bound.get((b, 0), float("nan")) for b in sizes])]
for name, ys in lines:
    ax.plot(sizes, ys, marker="o", markersize=3, label=name, linewidth=2.5 if name == "fairring" else 1.2)
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xticks(sizes[::2], [human_bytes(b) for b in sizes[::2]], rotation=45)
ax.set_xlabel("message size (allreduce float32, out of place)")
ax.set_ylabel("time per call (us, median)")
ax.set_title(f"allreduce on one node, {ranks} ranks")
ax.grid(True, which="both", alpha=0.3)
ax.legend()
fig.tight_layout()
fig.savefig(f"{out}/small-messages-np{ranks}.png", dpi=110)
print(f"plot: {out}/small-messages-np{ranks}.png")
PY
