#!/usr/bin/env bash
# The test dependencies the GPU machine lacks (it has Python 3.12, numpy and
# pytest, no network): the pure-Python packages of the package and of mlx-lm
# (transformers and the rest), for Python 3.12 on x86-64 Linux, as one
# archive that scripts/gpu_env.sh unpacks beside the MLX CUDA bundle
# (../shared/gpu/make_mlx_cuda_bundle.sh). Output: DEST/test-site.tar.xz (~17 MB).
#
# usage: scripts/make_gpu_test_bundle.sh DEST
set -euo pipefail
dest=${1:?usage: make_gpu_test_bundle.sh DEST}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_35_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d "$work/whl" "mlx-lm>=0.32,<0.33" platformdirs filelock
mkdir -p "$work/site" "$dest"
for w in "$work"/whl/*.whl; do
  case $(basename "$w") in numpy-*) continue ;; esac  # the machine's own numpy stays
  (cd "$work/site" && python3 -m zipfile -e "$w" .)
done
tar cf - -C "$work/site" . | xz -9 -T0 > "$dest/test-site.tar.xz"
ls -la "$dest/test-site.tar.xz"
