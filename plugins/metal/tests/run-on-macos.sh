#!/usr/bin/env bash
# Builds rlx with the metal target's Metal host (plugins/metal/src/metal_host.mm) and runs the
# metal suite on this Mac's GPU: what a macOS user runs to try the host.
#
# NOT RUN YET. This script was written on Linux, where the host has only been parsed by clang
# against declarations of the Foundation and Metal API (metal.MetalHost.* there). Nobody has run
# it on a Mac: neither the host nor rlx as a whole has been compiled by Apple's toolchain, linked
# against Metal.framework or run on an Apple GPU. Expect to fix things; report what failed.
#
# Needs: macOS 14+ (MSL 3.1, for bfloat), the Xcode command line tools (clang with
# Objective-C++), and rlx's build dependencies from Homebrew, roughly:
#   brew install cmake ninja ccache pkg-config fmt boost tomlplusplus cli11 simdjson utf8proc \
#     xxhash tbb googletest protobuf onnx zlib libpng openblas suite-sparse
# (scripts/install-deps.sh lists the Debian packages they stand for; targets whose SDK is absent
# configure themselves out.)
#
# Usage: plugins/metal/tests/run-on-macos.sh   (RLX_BUILD_DIR, default build-macos; RLX_JOBS)
set -euo pipefail
if [ "$(uname -s)" != Darwin ]; then
  echo "run-on-macos.sh: this is for macOS; on $(uname -s) run 'ctest -L metal' instead" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/../../.." && pwd)
build="${RLX_BUILD_DIR:-$root/build-macos}"
jobs="${RLX_JOBS:-$(sysctl -n hw.ncpu)}"

if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
# The metal plugin (with the host: CMake builds metal_host.mm when APPLE), the cpu target the
# tests compare against, the CLI and the metal test program.
cmake --build "$build" -j "$jobs" --target rlx_target_metal rlx_target_cpu rlx rlx_metal_tests

# The target's status: "available" with "Metal device <name>" when the host found the GPU.
"$build/bin/rlx" list-targets | grep -i metal || true

# The metal suite: the status and emit tests, the MSL run as C++ on the cpu, the host parsed
# against the declarations (clang is the system compiler here), and metal.MetalHost.Runs* /
# Reports*, which run programs on the GPU against the cpu target (they skip, saying why, when
# Metal finds no device).
cd "$build"
ctest -L metal --output-on-failure -j "$jobs"
