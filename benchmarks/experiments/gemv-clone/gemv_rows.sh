for m in 1 2 4 8; do
for shape in "14336 4096 all" "4096 4096 none" "4096 14336 all"; do
  set -- $shape
  echo "== M=$m N=$1 K=$2 cache-control $3"
  ncu --csv --page raw --cache-control $3 --clock-control none -k "regex:gemv|nvjet|gemm|sm90|sm80|cutlass" \
    --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    python3 benchmarks/experiments/gemv-clone/gemv_rows.py $m $1 $2 2>&1 | grep -v '^==PROF' | python3 benchmarks/experiments/gemv-clone/ncu_summary.py | grep -v " n=1 "
done; done
