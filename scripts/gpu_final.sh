# The full GPU check, in two device calls (see scripts/gpu_env.sh); logs and
# CSVs go to $OUT.
#   bash scripts/gpu_final.sh tests    every GPU test and the digits example
#   bash scripts/gpu_final.sh bench    the recorded sweep and the shape suite
source scripts/gpu_env.sh
case "$1" in
  tests)
    # Every test that can run there: all but the Metal CPU harness (its clang,
    # from ziglang, is not carried), the CUDA compile checks (the GPU runs the
    # kernels themselves), the notebook and the workflow check (their packages
    # are not carried either), and the collection check (CI's concern). Five
    # groups at once, to fit one call; the one timing test runs alone after.
    skip="--ignore=tests/metal --ignore=tests/build/test_cuda_compile.py
      --ignore=tests/test_notebook.py --ignore=tests/test_ci_workflow.py
      --ignore=tests/test_collection.py"
    timing=tests/gpu/test_gpu_layouts.py::test_x_times_w_transposed_costs_no_copy
    run_group() {  # name, pytest arguments...
      local name=$1; shift
      timeout 480 python3 -m pytest -q -p no:cacheprovider -rfEs "$@" > "$OUT/pytest-$name.log" 2>&1
    }
    run_group dtypes-bf16 tests/gpu/test_gpu_dtypes.py -k bfloat16 &
    run_group dtypes-rest tests/gpu/test_gpu_dtypes.py -k "not bfloat16" &
    run_group gpu-rest tests/gpu --ignore=tests/gpu/test_gpu_dtypes.py --deselect $timing &
    # MLX's test_blas.py routed to every op takes ~3 minutes alone: a group of its own.
    run_group conformance tests/conformance &
    run_group cpu-side tests --ignore=tests/gpu --ignore=tests/conformance $skip &
    wait
    run_group timing $timing -s
    for log in "$OUT"/pytest-*.log; do
      echo "== $log"; grep -E "x @ W|passed|failed|FAILED|ERROR|Timeout" "$log" | tail -12
    done
    timeout 100 python3 examples/digits_mlp.py > "$OUT/digits.log" 2>&1; tail -12 "$OUT/digits.log"
    ;;
  bench)
    timeout 500 python3 -m mlx_sgemm bench --quiet --out "$OUT/bench" > "$OUT/bench.log" 2>&1
    tail -45 "$OUT/bench.log"
    for precision in float32 tf32; do
      timeout 120 python3 benchmarks/shape_suite.py --precision $precision \
        --csv "$OUT/shapes.csv" > "$OUT/shapes-$precision.log" 2>&1
      cat "$OUT/shapes-$precision.log"
    done
    ;;
esac
