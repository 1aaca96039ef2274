#!/usr/bin/env bash
# Configures (once) and builds rlx into ./build with ccache. CCACHE_BASEDIR makes cache entries
# independent of where the tree is cloned.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export CCACHE_BASEDIR="$root"
export CCACHE_DIR="${CCACHE_DIR:-${HOME:-/root}/.cache/ccache}"
export CCACHE_COMPRESS=1
# Debug builds hash the working directory unless told not to, which makes every clone (and git
# worktree) miss the cache; the debug info's build folder is the price.
export CCACHE_NOHASHDIR=1
build="${RLX_BUILD_DIR:-$root/build}"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$build" -j "${RLX_JOBS:-2}"
