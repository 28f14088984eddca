import sys, statistics; sys.path.insert(0, "benchmarks")
from ncu_half_gemv import parse
import csv, io
lines = [l for l in open(sys.argv[1]).read().splitlines() if l.startswith('"')]
rows = list(csv.DictReader(io.StringIO("\n".join(lines))))[1:]
names = [r["Kernel Name"][:60] for r in rows]
vals = parse(open(sys.argv[1]).read())
i = 0
while i < len(vals):
    j = i
    while j < len(vals) and names[j] == names[i]: j += 1
    for s in range(i, j, 5):
        chunk = vals[s:min(j, s + 5)]
        print(f"  {names[i]:60s} n={len(chunk):2d} {statistics.median(c[0] for c in chunk):7.2f} us {statistics.median(c[1] for c in chunk):5.1f}%")
    i = j
