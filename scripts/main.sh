#!/usr/bin/env bash
# Quick start, part 1: install what is missing, build Release, run the main job.
# Until a model runs end to end, the main job is the kernel benchmark (sd-bench): the
# machine's measured FP32 peak and each core op's GFLOP/s against it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
./build/bench/sd-bench "$@"
