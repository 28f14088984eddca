# Source on the GPU machine (device tool): unpack the offline MLX CUDA bundle
# carried in .gpu/ (built by ../shared/gpu/make_mlx_cuda_bundle.sh .gpu) and the
# test dependencies the machine lacks (scripts/make_gpu_test_bundle.sh .gpu:
# mlx-lm, platformdirs, filelock), and put them and this checkout on
# PYTHONPATH. The machine has no network and no MLX. Recorded runs name the
# commit git reports; where the machine's .git is not the copied tree's, set
# MLX_SGEMM_SOURCE_COMMIT=<commit> before sourcing this (bench.measure.source_commit).
set -e
mkdir -p /tmp/site
for bundle in .gpu/mlx-cuda-site.tar.xz .gpu/test-site.tar.xz; do
  marker=/tmp/site/.$(basename "$bundle")
  if [ -f "$bundle" ] && [ ! -f "$marker" ]; then
    python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall('/tmp/site')" "$bundle" && touch "$marker"
  fi
done
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
export OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
python3 -c "import mlx.core as mx; print('mlx', mx.__version__, 'cuda', mx.cuda.is_available(), mx.device_info())"
set +e
