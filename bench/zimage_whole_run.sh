#!/bin/bash
# The whole 256x256 4-step Z-Image-Turbo generation of the fixture (the zimage reference case:
# 2 main layers + 2 + 2 refiners at full width, the full 36-layer Qwen3-4B in bf16, the FLUX VAE)
# through sd-cli, RUNS times (3 by default) with the files in the page cache: each run's phases,
# wall and CPU time and peak RSS. Then the floor under the reference program's loading: the
# seconds to read the same three files into freshly allocated memory.
#
#   bench/zimage_whole_run.sh [BUILD_DIR]      (RUNS=3, THREADS=2)
#
# Not part of the test suite; run it on a quiet machine (it needs ~11 GB free for the floor).
# Measured 2026-12-03 on the quiet 2-core machine: 10.26 / 10.27 / 11.03 s wall a run (prompt
# 1.17-1.46 s, step 1 2.1-2.6 s then 1.90-1.92 s, decode 0.99-1.10 s), peak RSS 6.67 GiB. The
# floor: 10.56 GB read into fresh memory in 25.49 s (0.41 GB/s).
source "$(dirname "$0")/bench_setup.sh"
runs=${RUNS:-3}
threads=${THREADS:-2}
files=(zimage/zimage_turbo_d2_bf16_seed30 qwen3/qwen3_4b_bf16_seed31 flux/flux_ae_f32_seed11)
require_fixtures "the Z-Image tests" "${files[@]}"
paths=()
for f in "${files[@]}"; do paths+=("$fx/$f.safetensors"); done
cat "${paths[@]}" >/dev/null

timed_runs "$runs" zimage_whole_run --diffusion-model "${paths[0]}" --llm "${paths[1]}" \
    --vae "${paths[2]}" --tokenizer-dir "$fixtures/tokenizers" \
    -p "a cinematic photograph of a hooded figure walking through a rainy city at night" \
    --cfg-scale 1 --steps 4 -W 256 -H 256 -s 42 -t "$threads"
fresh_read_floor "${paths[@]}"
