# Source on the GPU machine (device tool): unpack the offline MLX CUDA bundle
# carried in .gpu/ (built by ../shared/gpu/make_mlx_cuda_bundle.sh .gpu) and put
# it and this checkout on PYTHONPATH. The machine has no network and no MLX.
set -e
mkdir -p /tmp/site
if [ ! -d /tmp/site/mlx ]; then
  python3 -c "import tarfile; tarfile.open('.gpu/mlx-cuda-site.tar.xz').extractall('/tmp/site')"
fi
# .gpu/extra: pure-Python dependencies the bundle lacks (platformdirs, filelock),
# copied there from a local install.
export PYTHONPATH=/tmp/site:$PWD/.gpu/extra:$PWD PYTHONUNBUFFERED=1
export OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
python3 -c "import mlx.core as mx; print('mlx', mx.__version__, 'cuda', mx.cuda.is_available(), mx.device_info())"
set +e
