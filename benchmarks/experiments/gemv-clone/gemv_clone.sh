# ncu over benchmarks/experiments/gemv-clone/gemv_clone.py: DRAM (L2 flushed) and L2-resident (not flushed)
for shape in "14336 4096" "4096 4096" "4096 14336"; do
  for cc in all none; do
    echo "== $shape cache-control $cc"
    ncu --csv --page raw --cache-control $cc --clock-control none -k "regex:gemv" \
      --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
      python3 benchmarks/experiments/gemv-clone/gemv_clone.py $shape 2>&1 | grep -v '^==PROF' | python3 benchmarks/experiments/gemv-clone/ncu_summary.py
  done
done
