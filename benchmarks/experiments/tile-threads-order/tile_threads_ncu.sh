M=gpu__time_duration.sum,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,smsp__inst_executed_pipe_fma.sum,sm__cycles_elapsed.avg.per_second
for s in barrier long_scoreboard short_scoreboard mio_throttle math_pipe_throttle not_selected dispatch_stall wait lg_throttle no_instruction selected; do M=$M,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio; done
ncu --csv --page raw --cache-control all --clock-control none -k "regex:tile_threads|sgemm|Kernel2" --metrics $M python3 benchmarks/experiments/tile-threads-order/tile_threads_ncu.py 4096 2>&1 | grep '^"' > $OUT/tile_threads_ncu.csv
python3 - <<'PY'
import csv, os
rows = list(csv.DictReader(open(os.environ["OUT"] + "/tile_threads_ncu.csv")))
units, rows = rows[0], rows[1:]
keys = [k for k in rows[0] if "__" in k]
for r in rows:
    print(r["Kernel Name"][:50])
    print("   " + "; ".join(f"{k.replace('smsp__average_warps_issue_stalled_','stall_').replace('_per_issue_active.ratio','')}={r[k]}" for k in keys))
PY
