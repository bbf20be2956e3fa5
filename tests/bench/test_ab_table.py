"""ab_table.py, the table of compare/ab.sh, on jobs whose times are known:
each job's time is the median of its repetitions, each revision's the median
of its jobs with their range, and B/A the median and range of the ratios of
jobs run side by side; a row one revision lacks is left out.

    test_ab_table.py TOOLS_DIR   (tools/pg-bench)
"""
import csv
import os
import subprocess
import sys
import tempfile

tools = os.path.abspath(sys.argv[1])
HEADER = "backend,collective,bytes,count,dtype,op,in_place,time_us,algbw,busbw,wrong,rep,nranks".split(",")

# (side, job) -> [(backend, bytes, in_place, [times over repetitions])]
JOBS = {
    ("a", 0): [("fairring", 8, 0, [9.0, 20.0, 10.0]), ("fairring", 8, 1, [4.0]), ("mpi-raw", 8, 0, [2.0])],
    ("a", 1): [("fairring", 8, 0, [12.0]), ("fairring", 8, 1, [6.0])],
    ("b", 0): [("fairring", 8, 0, [5.0]), ("fairring", 8, 1, [4.0])],
    ("b", 1): [("fairring", 8, 0, [9.0]), ("fairring", 8, 1, [3.0])],
}

with tempfile.TemporaryDirectory() as folder:
    for (side, job), rows in JOBS.items():
        with open(os.path.join(folder, f"run-{side}-{job}.csv"), "w", newline="") as f:
            out = csv.writer(f)
            out.writerow(HEADER)
            for backend, nbytes, in_place, times in rows:
                for rep, t in enumerate(times):
                    out.writerow([backend, "allreduce", nbytes, nbytes // 4, "float32", "sum", in_place, t,
                                  0, 0, "", rep, 2])
    text = subprocess.run([sys.executable, os.path.join(tools, "compare", "ab_table.py"), folder, "2"],
                          check=True, capture_output=True, text=True).stdout

# collective, backend, size (two words), placement -> the cells after them
rows = {tuple(line.split()[:5]): line.split()[5:] for line in text.splitlines()[1:]}
failures = []
# A: jobs 10 (the median of 9, 20 and 10) and 12; B: 5 and 9; ratios 5/10 and 9/12.
oop = rows.get(("allreduce", "fairring", "8", "B", "oop"))
if oop != ["11.00", "[10.00-12.00]", "7.00", "[5.00-9.00]", "0.625", "[0.500-0.750]"]:
    failures.append(f"out of place: {oop}")
# A: 4 and 6; B: 4 and 3; ratios 1 and 0.5.
ip = rows.get(("allreduce", "fairring", "8", "B", "ip"))
if ip != ["5.00", "[4.00-6.00]", "3.50", "[3.00-4.00]", "0.750", "[0.500-1.000]"]:
    failures.append(f"in place: {ip}")
if any(k[1] == "mpi-raw" for k in rows):
    failures.append("mpi-raw ran in A's jobs only and must be left out")
print(text)
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
