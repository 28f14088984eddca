import sys, csv, io, statistics
text = sys.stdin.read()
for line in text.splitlines():
    if line.startswith("variant") or "Error" in line or "error" in line: print(line)
lines = [l for l in text.splitlines() if l.startswith('"')]
if not lines: print(text[-3000:]); sys.exit()
units, *rows = csv.DictReader(io.StringIO("\n".join(lines)))
scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}[units["gpu__time_duration.sum"]]
names = [r["Kernel Name"][:60] for r in rows]
t = [float(r["gpu__time_duration.sum"].replace(",", "")) * scale for r in rows]
d = [float(r["dram__throughput.avg.pct_of_peak_sustained_elapsed"].replace(",", "")) for r in rows]
# first len(VARIANTS) launches are the correctness checks
i = 0
groups = []
while i < len(rows):
    j = i
    while j < len(rows) and names[j] == names[i] and j - i < 5: j += 1
    groups.append((names[i], t[i:j], d[i:j])); i = j
for name, tt, dd in groups:
    print(f"{name:60s} n={len(tt)} {statistics.median(tt):7.2f} us  dram {statistics.median(dd):5.1f}%")
