# ncu over token shapes: one-row variants against mx.matmul and matmul (half_gemv)
set -e
VARS="2,8,1 2,8,2 2,8,4 1,8,2 4,4,2 4,4,4"
for shape in "1 14336 4096 T" "1 4096 4096 T" "1 4096 14336 T" "1 11008 4096 T"; do
  echo "== $shape"
  ncu --csv --page raw --cache-control all --clock-control none \
    --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    python3 benchmarks/experiments/half-gemv-one-row/one_row.py ncu $shape bfloat16 $VARS > /tmp/ncu.csv 2>/tmp/ncu.err || { tail -5 /tmp/ncu.err; }
  python3 benchmarks/experiments/half-gemv-one-row/ncu_groups.py /tmp/ncu.csv
done
for shape in "1 4096 4096 T"; do
  echo "== $shape (cache-control none)"
  ncu --csv --page raw --cache-control none --clock-control none \
    --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    python3 benchmarks/experiments/half-gemv-one-row/one_row.py ncu $shape bfloat16 $VARS > /tmp/ncu.csv 2>/tmp/ncu.err || { tail -5 /tmp/ncu.err; }
  python3 benchmarks/experiments/half-gemv-one-row/ncu_groups.py /tmp/ncu.csv
done
