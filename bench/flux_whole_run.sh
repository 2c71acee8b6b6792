#!/bin/bash
# The whole 256x256 4-step FLUX.1-dev generation of the fixture (the flux_euler reference case:
# 2+2 blocks at full width, 2-layer T5-XXL, CLIP-L, the VAE) through sd-cli, RUNS times (3 by
# default) with the files in the page cache: each run's phases (prompt encoding, each step,
# the decode), its wall and CPU time and peak RSS. Then a floor under the reference program's
# loading on this machine: the seconds to read the same four files into freshly allocated
# memory, which its default loader (no --mmap) must do before its first step.
#
#   bench/flux_whole_run.sh [BUILD_DIR]      (RUNS=3, THREADS=2)
#
# Not part of the test suite; run it on a quiet machine.
# Measured 2026-12-02 on the quiet 2-core machine (327a884, files in the page cache, read in
# by sd-cli's 2 MiB-folio mappings): 5.99 / 6.09 / 6.58 s wall a run (10.1-10.6 s user,
# 0.9-1.2 s system): prompt 0.81-1.14 s, steps 1.34-1.57 s then 0.79-0.84 s, decode
# 1.21-1.25 s, image 5.02-5.28 s after the prompt; peak RSS 2.14 GiB. The floor: 3.67 GB read
# into fresh memory in 27.96 s (0.13 GB/s: this virtual machine backs fresh pages slowly).
source "$(dirname "$0")/bench_setup.sh"
runs=${RUNS:-3}
threads=${THREADS:-2}
files=(flux/flux_dev_d2s2_bf16_seed10 flux/flux_ae_f32_seed11 flux/clip_l_f16_seed12
       flux/t5xxl_l2_f16_seed13)
require_fixtures "the FLUX tests" "${files[@]}"
paths=()
for f in "${files[@]}"; do paths+=("$fx/$f.safetensors"); done
cat "${paths[@]}" >/dev/null

timed_runs "$runs" flux_whole_run --diffusion-model "${paths[0]}" --vae "${paths[1]}" \
    --clip_l "${paths[2]}" --t5xxl "${paths[3]}" --tokenizer-dir "$fixtures/tokenizers" \
    -p "a lovely cat holding a sign" --cfg-scale 1 --guidance 3.5 --sampling-method euler \
    --steps 4 -W 256 -H 256 -s 42 --rng cuda -t "$threads"
fresh_read_floor "${paths[@]}"
