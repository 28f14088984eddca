# The full GPU check, in three device calls (see scripts/gpu_env.sh); logs and
# CSVs go to $OUT.
#   bash scripts/gpu_final.sh tests          the GPU tests but the dtype matrix, and the digits example
#   bash scripts/gpu_final.sh tests-dtypes   the dtype matrix, MLX's conformance suite, the rest
#   bash scripts/gpu_final.sh bench          the recorded sweep and the shape suite
#   bash scripts/gpu_final.sh half           the half products: kernel times, the shape suite in both half types
#   bash scripts/gpu_final.sh models         the bfloat16 models (prefill, decode, generate; and a batch of 4) and a generate timeline
#   bash scripts/gpu_final.sh timeline       one float32 product's kernels and host time, at 2048^3 and 4096^3
source scripts/gpu_env.sh
case "$1" in
  tests|tests-dtypes)
    # Every test that can run there: all but the Metal CPU harness (its clang,
    # from ziglang, is not carried), the CUDA compile checks (the GPU runs the
    # kernels themselves), the notebook and the workflow check (their packages
    # are not carried either), and the collection check (CI's concern). Two
    # calls, each of groups run at once: `tests` the GPU tests but the dtype
    # matrix (two groups), the timing test and the digits example;
    # `tests-dtypes` the dtype matrix in two halves, MLX's conformance suite
    # (about 5 minutes) and the tests of the rest. All in one call ran past
    # the call's 10 minutes.
    skip="--ignore=tests/metal --ignore=tests/build/test_cuda_compile.py
      --ignore=tests/test_notebook.py --ignore=tests/test_ci_workflow.py
      --ignore=tests/test_collection.py"
    timing=tests/gpu/test_gpu_layouts.py::test_x_times_w_transposed_costs_no_copy
    run_group() {  # name, pytest arguments...
      local name=$1; shift
      timeout 540 python3 -m pytest -q -p no:cacheprovider -rfEs "$@" > "$OUT/pytest-$name.log" 2>&1
    }
    if [ "$1" = tests ]; then
      # Two groups at once (one of them ran past the 540 s alone): small_m's
      # many cases, and the rest; then the timing test alone.
      run_group gpu-small-m tests/gpu/test_gpu_small_m.py &
      run_group gpu-rest tests/gpu --ignore=tests/gpu/test_gpu_dtypes.py --ignore=tests/gpu/test_gpu_small_m.py \
        --deselect $timing &
      wait
      run_group timing $timing -s
    else
      run_group dtypes-bf16 tests/gpu/test_gpu_dtypes.py -k bfloat16 &
      run_group dtypes-rest tests/gpu/test_gpu_dtypes.py -k "not bfloat16" &
      run_group conformance tests/conformance &
      run_group cpu-side tests --ignore=tests/gpu --ignore=tests/conformance $skip &
      wait
    fi
    for log in "$OUT"/pytest-*.log; do
      echo "== $log"; grep -E "x @ W|passed|failed|FAILED|ERROR|Timeout" "$log" | tail -12
    done
    if [ "$1" = tests ]; then
      timeout 100 python3 examples/digits_mlp.py > "$OUT/digits.log" 2>&1; tail -12 "$OUT/digits.log"
    fi
    ;;
  half)
    timeout 150 python3 benchmarks/half_kernel_times.py --kernels mx ours wgmma:128x128 wgmma:128x192 wgmma:128x256 \
      --csv "$OUT/half-kernel-times.csv" > "$OUT/half-kernel-times.log" 2>&1
    grep -E "^==|  (mx|ours) " "$OUT/half-kernel-times.log"
    timeout 300 python3 benchmarks/shape_suite.py --dtype bfloat16 float16 \
      --csv "$OUT/shapes-half.csv" > "$OUT/shapes-half.log" 2>&1
    tail -65 "$OUT/shapes-half.log"
    ;;
  models)
    # Five rounds: the generate phase is bound by the host, whose speed varies
    # between runs (docs/performance-log.md, "mlx-lm's generation loop is bound
    # by the host").
    timeout 300 python3 benchmarks/model_speed.py --configs bfloat16 --no-first-calls --rounds 5 \
      --csv "$OUT/models.csv" > "$OUT/models.log" 2>&1
    tail -5 "$OUT/models.log"
    # A batch of 4 sequences: a layer multiplies their rows as one matrix
    # (docs/performance-log.md, "A batch of rows against one weight, one product").
    timeout 150 python3 benchmarks/model_speed.py --configs bfloat16 --no-first-calls --rounds 3 --batch 4 \
      --csv "$OUT/models-batch.csv" > "$OUT/models-batch.log" 2>&1
    tail -3 "$OUT/models-batch.log"
    # The timeline alone in its file (it is recorded as it is); the profiler's
    # warnings go to a log of their own.
    MODE=generate timeout 200 python3 benchmarks/decode_timeline.py > "$OUT/generate-timeline.txt" \
      2> "$OUT/generate-timeline.log"
    grep -E "^==|runtime" "$OUT/generate-timeline.txt"; tail -3 "$OUT/generate-timeline.log"
    ;;
  timeline)
    # matmul and mx.matmul in turn, three evaluations each: the kernels, the
    # host's time before the graph launch with its CUDA API calls, the wait
    # after the last kernel (benchmarks/one_product_timeline.py).
    for n in 2048 4096; do
      timeout 120 python3 benchmarks/one_product_timeline.py --size $n --evaluations 3 \
        --csv "$OUT/one-product-timeline-$n.csv" > "$OUT/timeline-$n.log" 2>&1
      cut -d, -f8- "$OUT/one-product-timeline-$n.csv"
    done
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
