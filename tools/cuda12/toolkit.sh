#!/usr/bin/env bash
# A CUDA 12 toolkit for the benches from PyPI's nvidia-*-cu12 wheels, laid out as CMake's
# FindCUDAToolkit expects it: DIR/toolkit/{include,lib64,bin,nvvm}. The wheels are downloaded once
# into DIR/wheels (kept: a rerun unpacks from there without the network).
#   tools/cuda12/toolkit.sh DIR
# The wheels carry the headers and shared libraries (cudart, cuBLAS/cuBLASLt, NVRTC, cuDNN, NCCL),
# ptxas and libnvvm, but not the nvcc driver: kernels_bench then compiles its few device kernels
# at run time with NVRTC (docs/kernels-bench.md).
set -euo pipefail
dir=${1:?usage: toolkit.sh DIR}
# Pinned: CUDA 12.4 for the runtime, cuBLAS, NVRTC and headers (the binaries then need a driver
# for CUDA 12.4 or later: calibration/cuda_driver.h), cuDNN and NCCL as PyTorch 2.8's CUDA 12
# wheels pin them (both are built for any CUDA 12 driver).
wheels=(
  nvidia-cuda-runtime-cu12==12.4.127
  nvidia-cuda-nvcc-cu12==12.4.131
  nvidia-cuda-nvrtc-cu12==12.4.127
  nvidia-cuda-cccl-cu12==12.4.127.post1
  nvidia-cublas-cu12==12.4.5.8
  nvidia-cudnn-cu12==9.10.2.21
  nvidia-nccl-cu12==2.27.3
)
mkdir -p "$dir/wheels"
have=1
for w in "${wheels[@]}"; do
  name=${w%%==*}; ver=${w##*==}
  ls "$dir/wheels/${name//-/_}-${ver}-"*.whl >/dev/null 2>&1 || have=0
done
if [ $have = 0 ]; then
  python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$dir/wheels" "${wheels[@]}"
fi
root=$dir/toolkit
rm -rf "$root" "$dir/unpacked"
mkdir -p "$dir/unpacked" "$root/include" "$root/lib64/stubs" "$root/bin"
python3 - "$dir" <<'PY'
import glob, sys, zipfile
for w in sorted(glob.glob(sys.argv[1] + "/wheels/*.whl")):
    with zipfile.ZipFile(w) as z:
        z.extractall(sys.argv[1] + "/unpacked", [n for n in z.namelist() if n.startswith("nvidia/")])
PY
# zipfile drops the permission bits: ptxas must stay executable.
chmod +x "$dir"/unpacked/nvidia/cuda_nvcc/bin/*
nv=$dir/unpacked/nvidia
# Headers and libraries of every component side by side (relative links: the tree can move).
for comp in "$nv"/*/; do
  [ -d "$comp/include" ] && for f in "$comp"include/*; do
    case $(basename "$f") in __init__.py|__pycache__) continue;; esac
    ln -sfn "$(realpath --relative-to="$root/include" "$f")" "$root/include/"
  done
  [ -d "$comp/lib" ] && for f in "$comp"lib/*.so*; do
    ln -sfn "$(realpath --relative-to="$root/lib64" "$f")" "$root/lib64/"
    base=$(basename "$f"); ln -sfn "$base" "$root/lib64/${base%%.so*}.so"  # unversioned, for the linker
  done
done
ln -sfn "$(realpath --relative-to="$root/bin" "$nv/cuda_nvcc/bin/ptxas")" "$root/bin/ptxas"
ln -sfn "$(realpath --relative-to="$root" "$nv/cuda_nvcc/nvvm")" "$root/nvvm"
# The driver API stub (libcuda.so, link time only; the driver's own library is used at run time):
# the wheels ship none, so the installed toolkit's is linked when there is one.
for stub in /usr/local/cuda/lib64/stubs/libcuda.so /usr/local/cuda/targets/*/lib/stubs/libcuda.so; do
  if [ -e "$stub" ]; then ln -sfn "$stub" "$root/lib64/stubs/libcuda.so"; break; fi
done
# FindCUDAToolkit without nvcc takes the root and the version from version.txt.
ver=$(sed -n 's/^#define CUDART_VERSION \([0-9]*\)/\1/p' "$root/include/cuda_runtime_api.h")
rt=$(basename "$dir"/wheels/nvidia_cuda_runtime_cu12-*.whl | cut -d- -f2)
echo "CUDA Version $rt" > "$root/version.txt"
echo "cuda12 toolkit: CUDA $((ver / 1000)).$((ver % 1000 / 10)) in $root ($(du -sh "$dir/wheels" | cut -f1) of wheels)"
