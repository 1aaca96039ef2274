#!/usr/bin/env bash
# The cuda target's proof on a machine with an NVIDIA GPU (the H200 of the `device` tool), and the
# rocm target's HIP kernels run there through NVRTC, in two halves, because that machine has a
# driver and a toolkit but not rlx's build dependencies:
#
#   tests/gpu/run-on-device.sh pack [BUILD]   here: builds rlx, the cuda, rocm and tpu plugins and
#       their test programs, packs rlx with bench/gpu/bundle.sh into .device/ and the test programs
#       beside it (.device/cuda-tests.tar.gz, with the paths they were built with).
#   tests/gpu/run-on-device.sh run [all|suite|cli|rocm|tpu|tpu-bench]   there (the fixtures travel with the working
#       tree, .device/ is carried): unpacks both, runs the cuda conformance suite (every MIR primitive
#       at every dtype against hand-computed references, the shared GPU-like tests against cpu,
#       the fixtures qwen3-tiny greedy tokens, minilm-l2-f16 and bert-tiny-onnx) with
#       RLX_EXPECT_TARGETS=cuda, so a missing device fails instead of skipping, then
#       `rlx run|embed|generate|bench --target cuda` on the fixtures against --target cpu.
#
# `run suite` runs only the conformance suite (GTEST_FILTER narrows it), `run cli` only the rlx
# commands: each fits one device call of 10 minutes where the whole may not. `run rocm` runs the
# rocm conformance suite with RLX_ROCM_VIA_CUDA=1 and RLX_EXPECT_TARGETS=rocm: the HIP source the
# rocm target generates, compiled by NVRTC through its HIP-on-CUDA header and run on the NVIDIA GPU
# against the same references and cpu (the HIP kernels' semantics, not AMD performance), then
# rlx_rocm_codegen_tests (the HIP of every kernel through NVRTC; the gfx90a tests skip there, as
# that machine has no ROCm) and `rlx run` of minilm-l2-f16 on rocm against cpu. `run tpu` runs the
# tpu target's suite instead (the same tests, StableHLO compiled by XLA) through JAX's CUDA PJRT
# plugin (jax_plugins/xla_cuda*/xla_cuda_plugin.so of that machine's python3) with
# RLX_EXPECT_TARGETS=tpu; `run tpu-bench` races the tpu target against JAX's jit of the real
# all-MiniLM-L6-v2 (/tmp/minilm, packed by bundle.sh) on the GPU (bench/gpu/tpu_vs_jax.py).
# Exit status: 0 when everything passed. The log is on stdout; a summary is the last lines.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
mode=${1:-}

pack() {
  set -e
  local build=${1:-$root/build}
  # bundle.sh installs the whole build, so all of it is built (rlx_cuda_tests among it).
  cmake --build "$build"
  # RLX_BUNDLE_ARGS=--minilm also packs the real MiniLM for bench/gpu/run.py.
  "$root/bench/gpu/bundle.sh" ${RLX_BUNDLE_ARGS:-} "$build" "$root/.device"
  local stage
  stage=$(mktemp -d)
  mkdir -p "$stage/cuda-tests"
  for t in cuda/tests/rlx_cuda_tests cuda/tests/rlx_cuda_codegen_tests rocm/tests/rlx_rocm_tests \
    rocm/tests/rlx_rocm_codegen_tests tpu/tests/rlx_tpu_tests; do
    strip --strip-debug -o "$stage/cuda-tests/${t##*/}" "$build/plugins/$t"
  done
  # The libraries it links beyond rlx's own (GoogleTest where it is shared), as bundle.sh picks
  # them: not the C and C++ runtimes.
  mkdir -p "$stage/cuda-tests/lib"
  ldd "$build/plugins/cuda/tests/rlx_cuda_tests" | awk '/=> \//{print $3}' |
    grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libstdc\+\+|libgcc_s|librlx_[^/]*)\.so' |
    xargs -r cp -L -t "$stage/cuda-tests/lib/"
  # The test program names the plugin folder and the fixtures by the absolute paths of this
  # build; `run` links those paths to where they are on the GPU machine.
  {
    echo "build_plugins=$build/share/rlx/plugins.d"
    echo "fixtures=$root/tests/data/fixtures"
    echo "rlx_binary=$build/bin/rlx"
  } >"$stage/cuda-tests/paths.env"
  tar czf "$root/.device/cuda-tests.tar.gz" -C "$stage" cuda-tests
  rm -rf "$stage"
  du -sh "$root/.device"/*
}

failures=() skipped=()
check() {  # check NAME COMMAND...: runs it, records a failure
  echo "== $1"
  shift
  if "$@"; then echo "   ok"; else failures+=("$*"); echo "   FAILED"; fi
}

same_tokens() {  # rlx generate on cuda gives cpu's greedy tokens
  local m=tests/data/fixtures/qwen3-tiny cpu cuda
  cpu=$(rlx generate "$m" --target cpu --prompt-ids 1,2,3,4 --max-new-tokens 16 --ignore-eos 2>/dev/null)
  cuda=$(rlx generate "$m" --target cuda --prompt-ids 1,2,3,4 --max-new-tokens 16 --ignore-eos 2>/dev/null)
  echo "   cpu:  $cpu"
  echo "   cuda: $cuda"
  [ -n "$cuda" ] && [ "$cpu" = "$cuda" ]
}

runs_like_cpu() {  # rlx run (and rlx embed) of minilm-l2-f16 on TARGET (cuda), on inputs rlx bench made up
  local target=${1:-cuda} m=tests/data/fixtures/minilm-l2-f16 dir
  dir=$(mktemp -d)
  rlx bench "$m" --target cpu --batch 2 --seq 16 --warmup 1 --runs 1 --save-inputs "$dir/in.safetensors" >/dev/null &&
    rlx run "$m" --target cpu --inputs "$dir/in.safetensors" --output "$dir/cpu.safetensors" &&
    rlx run "$m" --target "$target" --inputs "$dir/in.safetensors" --output "$dir/$target.safetensors" &&
    rlx embed "$m" --target "$target" --inputs "$dir/in.safetensors" || return 1
  if ! python3 -c 'import numpy' 2>/dev/null; then
    skipped+=("the cpu/cuda comparison of rlx run (python3 has no numpy)")
    return 0
  fi
  PYTHONPATH="$root/bench" python3 - "$dir/cpu.safetensors" "$dir/$target.safetensors" "$target" <<'PY'
import sys
import numpy as np
from lib import st
cpu, other = st.read(sys.argv[1]), st.read(sys.argv[2])
worst = max(float(np.max(np.abs(cpu[k].astype(np.float64) - other[k].astype(np.float64)))) for k in cpu)
print(f"   max abs difference {sys.argv[3]} vs cpu: {worst:.3g} (limit 1e-3)")
sys.exit(0 if worst <= 1e-3 else 1)
PY
}

device_stats() {  # rlx bench's CUDA-event time and peak device memory; RLX_PROFILE's device clock
  local m=tests/data/fixtures/minilm-l2-f16 json err
  json=$(rlx bench "$m" --target cuda --batch 8 --seq 128 --warmup 2 --runs 5 --json) || return 1
  echo "$json" | python3 -c '
import json, sys
r = json.load(sys.stdin)
dev, host, peak = r.get("device_p50_ms"), r["p50_ms"], r.get("peak_device_mb")
print(f"   p50 {host} ms, on the device {dev} ms, peak device memory {peak} MB")
# The device time is part of the host time; the weights alone (minilm-l2-f16: 2 layers of 384)
# hold more than 1 MB on the device.
sys.exit(0 if dev is not None and 0 < dev <= host * 1.05 and peak is not None and peak > 1 else 1)' ||
    return 1
  err=$(RLX_PROFILE=1 rlx bench "$m" --target cuda --batch 8 --seq 128 --warmup 1 --runs 2 2>&1 >/dev/null)
  echo "$err" | head -4
  grep -q "over runs 2 to 3 (the first is left out), each timed on the device's clock" <<<"$err" &&
    grep -q "dot_general cuBLASLt 1024x" <<<"$err"
}

compiles() {  # rlx compile writes the CUDA C++, PTX and a cubin for the device
  local out
  out=$(mktemp -d)
  rlx compile tests/data/fixtures/minilm-l2-f16 --target cuda --bind B=2 --bind S=16 -o "$out" >/dev/null &&
    ls "$out"/cuda_kernels.cu "$out"/cuda_kernels.ptx "$out"/cuda_kernels.sm_*.cubin
}

# JAX's CUDA PJRT plugin, found where python3's jax_plugins package is (xla_cuda13 or xla_cuda12).
cuda_pjrt_plugin() {
  python3 - <<'PY'
import glob, os
import jax_plugins
for d in jax_plugins.__path__:
    for so in sorted(glob.glob(os.path.join(d, "xla_cuda*", "xla_cuda_plugin.so")), reverse=True):
        print(so)
        raise SystemExit(0)
raise SystemExit("no jax_plugins/xla_cuda*/xla_cuda_plugin.so in this python3")
PY
}

tpu_suite() {  # the tpu conformance suite through JAX's CUDA PJRT plugin
  local plugin
  plugin=$(cuda_pjrt_plugin) || { failures+=("finding JAX's CUDA PJRT plugin"); return; }
  echo "   PJRT plugin: $plugin"
  export RLX_PJRT_PLUGIN=$plugin
  check "tpu is available on the CUDA PJRT plugin" bash -c "rlx --list-targets | grep -E '^  tpu +available'"
  check "conformance suite on tpu through XLA's CUDA plugin (RLX_EXPECT_TARGETS=tpu)" \
    env RLX_EXPECT_TARGETS=tpu /tmp/cuda-tests/rlx_tpu_tests --gtest_brief=1 ${GTEST_FILTER:+--gtest_filter=$GTEST_FILTER}
}

tpu_bench() {  # rlx's tpu target against JAX's jit of MiniLM on the same GPU
  local plugin
  plugin=$(cuda_pjrt_plugin) || { failures+=("finding JAX's CUDA PJRT plugin"); return; }
  [ -d /tmp/minilm ] || { skipped+=("tpu vs JAX (no /tmp/minilm: pack with the model)"); return; }
  check "tpu vs JAX jit, all-MiniLM-L6-v2 seq 128" env RLX_PJRT_PLUGIN="$plugin" \
    python3 bench/gpu/tpu_vs_jax.py --model /tmp/minilm --batches "${RLX_TPU_BENCH_BATCHES:-1,8,32}" \
      --seq 128 --rounds "${RLX_TPU_BENCH_ROUNDS:-3}"
}

run() {
  local part=${1:-all}
  cd "$root"
  # shellcheck source=/dev/null
  . "$root/bench/gpu/on_device.sh"
  tar xzf .device/cuda-tests.tar.gz -C /tmp
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/tmp/cuda-tests/lib
  # shellcheck source=/dev/null
  . /tmp/cuda-tests/paths.env
  mkdir -p "$(dirname "$build_plugins")" "$(dirname "$fixtures")"
  [ -e "$build_plugins" ] || ln -s /tmp/rlx/share/rlx/plugins.d "$build_plugins"
  [ -e "$fixtures" ] || ln -s "$root/tests/data/fixtures" "$fixtures"
  # The codegen tests that run the rlx program name it by its path here.
  if [ -n "${rlx_binary:-}" ] && [ ! -e "$rlx_binary" ]; then
    mkdir -p "$(dirname "$rlx_binary")" && ln -s /tmp/rlx/bin/rlx "$rlx_binary"
  fi
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
  (command -v nvcc >/dev/null && nvcc --version | tail -2) || true
  if [ "$part" = rocm ]; then
    run_rocm
    return
  fi
  local label=cuda
  if [ "$part" = tpu ]; then
    tpu_suite
    part=done label=tpu
  elif [ "$part" = tpu-bench ]; then
    tpu_bench
    part=done label=tpu
  else
    check "cuda is available" bash -c "rlx --list-targets | grep -E '^  cuda +available'"
  fi
  if [ "$part" != cli ] && [ "$part" != done ]; then
    check "conformance suite on cuda (RLX_EXPECT_TARGETS=cuda)" \
      env RLX_EXPECT_TARGETS=cuda /tmp/cuda-tests/rlx_cuda_tests --gtest_brief=1 ${GTEST_FILTER:+--gtest_filter=$GTEST_FILTER}
    check "cuda's own tests (NVRTC there, cubins for sm_90)" /tmp/cuda-tests/rlx_cuda_codegen_tests --gtest_brief=1
  fi
  [ "$part" = suite ] && part=done
  [ "$part" != done ] && check "rlx generate qwen3-tiny: cuda's greedy tokens are cpu's" same_tokens
  [ "$part" != done ] && check "rlx run and rlx embed minilm-l2-f16 on cuda" runs_like_cpu cuda
  [ "$part" != done ] && check "rlx bench minilm-l2-f16 on cuda" \
    rlx bench tests/data/fixtures/minilm-l2-f16 --target cuda --batch 8 --seq 128
  [ "$part" != done ] && check "rlx bench on cuda: CUDA-event p50, peak device memory, device-clock profile" device_stats
  [ "$part" != done ] && check "rlx compile --target cuda writes .cu, .ptx and .cubin" compiles
  summary "$label"
}

# The rocm target's HIP kernels on the NVIDIA GPU: RLX_ROCM_VIA_CUDA=1 makes its device NVRTC and
# the CUDA driver, with the HIP source compiled through the HIP-on-CUDA header.
run_rocm() {
  export RLX_ROCM_VIA_CUDA=1
  check "rocm runs HIP on the CUDA device (RLX_ROCM_VIA_CUDA=1)" \
    bash -c "rlx --list-targets | grep -E '^  rocm +available .*HIP on CUDA device'"
  check "rocm conformance suite, HIP through NVRTC (RLX_EXPECT_TARGETS=rocm)" \
    env RLX_EXPECT_TARGETS=rocm /tmp/cuda-tests/rlx_rocm_tests --gtest_brief=1 ${GTEST_FILTER:+--gtest_filter=$GTEST_FILTER}
  # Outside the mode: they check the status without an AMD GPU, and the HIP through NVRTC.
  check "rocm's own tests (the HIP of every kernel through NVRTC; no ROCm there for gfx90a)" \
    env -u RLX_ROCM_VIA_CUDA /tmp/cuda-tests/rlx_rocm_codegen_tests --gtest_brief=1
  check "rlx run and rlx embed minilm-l2-f16 on rocm (HIP on CUDA)" runs_like_cpu rocm
  summary "rocm (HIP through NVRTC)"
}

summary() {  # summary WHAT: the skipped and failed checks; exits 1 on a failure
  echo
  if ((${#skipped[@]})); then
    echo "SKIPPED: ${#skipped[@]}"
    printf '  %s\n' "${skipped[@]}"
  fi
  if ((${#failures[@]})); then
    echo "FAILED: ${#failures[@]}"
    printf '  %s\n' "${failures[@]}"
    exit 1
  fi
  echo "all $1 checks passed"
}

case $mode in
  pack) shift; pack "$@" ;;
  run) shift; run "$@" ;;
  *) echo "usage: tests/gpu/run-on-device.sh pack [BUILD] | run [all|suite|cli|rocm|tpu|tpu-bench]" >&2; exit 2 ;;
esac
