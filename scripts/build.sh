#!/usr/bin/env bash
# Configures (once) and builds rlx into ./build with ccache. CCACHE_BASEDIR makes cache entries
# independent of where the tree is cloned.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export CCACHE_BASEDIR="$root"
export CCACHE_DIR="${CCACHE_DIR:-${HOME:-/root}/.cache/ccache}"
export CCACHE_COMPRESS=1
# Bounded below ccache's default 5 GB: one configuration's entries take about 2 GB, and a flag
# change would otherwise keep the old set beside the new one on a shared disk.
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-3G}"
# Debug builds hash the working directory unless told not to, which makes every clone (and git
# worktree) miss the cache; the debug info's build folder is the price.
export CCACHE_NOHASHDIR=1
build="${RLX_BUILD_DIR:-$root/build}"
# The Python module (python/) is built with the test venv's Python when it has nanobind
# (scripts/test.sh installs it there); without one it is skipped.
venv="${RLX_VENV:-$root/.venv}"
python_args=()
if [ -x "$venv/bin/python" ]; then python_args=(-DPython_EXECUTABLE="$venv/bin/python"); fi
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${python_args[@]}"
fi
cmake --build "$build" -j "${RLX_JOBS:-2}"
