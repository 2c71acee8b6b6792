#!/usr/bin/env bash
# Configures and builds into BUILD_DIR (default build/) with CMake + Ninja.
# Extra arguments go to cmake's configure step, e.g. -DSD_SANITIZE=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${BUILD_DIR:-build}"
jobs="${JOBS:-$(nproc)}"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" "$@" >/dev/null
ninja -C "$build_dir" -j "$jobs"
