# The full GPU check, in one device call (see scripts/gpu_env.sh): every GPU
# test, the digits example, and a recorded benchmark sweep. Logs and CSVs go to
# $OUT.
source scripts/gpu_env.sh
python3 -m pytest -q -p no:cacheprovider -rfEs tests/test_gpu_ops.py tests/test_autodiff.py \
  tests/test_hardening.py tests/test_gpu_layouts.py tests/test_examples.py tests/test_cli.py \
  tests/test_problem.py tests/test_ops_cpu.py -s > "$OUT/pytest.log" 2>&1
grep -E "x @ W|passed|failed|FAILED|SKIPPED" "$OUT/pytest.log" | tail -25
python3 examples/digits_mlp.py > "$OUT/digits.log" 2>&1; cat "$OUT/digits.log"
python3 -m mlx_sgemm bench --quiet --out "$OUT/bench" \
  --shapes 1,4096,4096 8,4096,4096 32,14336,4096 512,4096,14336 2048,1024,4096 4095,4097,4093 \
  > "$OUT/bench.log" 2>&1
tail -80 "$OUT/bench.log"
cp "$OUT"/bench/bench-*.csv "$OUT"/ 2>/dev/null
