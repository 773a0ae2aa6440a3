#!/usr/bin/env bash
# Gathers what the GPU check needs on the device machine, which has CUDA 13 (nvcc,
# cuBLASLt, CUPTI) but none of the Debian libraries tierscope links, and no network: the
# CUDA build's tierscope, its CUDA plugin (libtierscope_cuda.so, opened on --device cuda)
# and backend_test (build/release here compiles sm_80 and sm_90 when the toolkit is
# installed) and the shared libraries they need beside glibc,
# libstdc++ and CUDA's own, into .gpu_bundle/ (ignored by git; about 30 MB). Then, with
# the device tool:  run(carry=[".gpu_bundle"], command="bash bench/gpu/check.sh")
# (check.sh finds the bundle and the device's CUDA libraries by itself).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/release}
[ -x "$build/tierscope" ] || bash scripts/build.sh release
if [ ! -f "$build/libtierscope_cuda.so" ]; then
  echo "bundle: $build has no CUDA plugin (libtierscope_cuda.so; is the CUDA toolkit installed?)" >&2
  exit 1
fi
grep -qx '/.gpu_bundle/' .git/info/exclude 2>/dev/null || echo '/.gpu_bundle/' >>.git/info/exclude
rm -rf .gpu_bundle
mkdir -p .gpu_bundle/lib .gpu_bundle/tests
cp "$build/tierscope" "$build/libtierscope_cuda.so" .gpu_bundle/
cp "$build/tests/backend_test" .gpu_bundle/tests/
strip .gpu_bundle/tierscope .gpu_bundle/libtierscope_cuda.so .gpu_bundle/tests/*
for bin in .gpu_bundle/tierscope .gpu_bundle/libtierscope_cuda.so .gpu_bundle/tests/*; do
  ldd "$bin" | awk '/=> \// {print $3}'
done | sort -u | while read -r lib; do
  case $(basename "$lib") in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libutil.so*|libgcc_s.so*|\
    libstdc++.so*|ld-linux*|libcublas*|libcupti*|libcudart*) ;;
    *) cp -L "$lib" .gpu_bundle/lib/ ;;
  esac
done
ls .gpu_bundle/lib
# ICU's data alone is 31 MB: the libraries travel as one xz archive (about 14 MB) to keep the
# bundle well inside the device tool's 64 MiB; check.sh unpacks it there.
tar -cJf .gpu_bundle/lib.tar.xz -C .gpu_bundle lib
rm -rf .gpu_bundle/lib
du -sh .gpu_bundle
