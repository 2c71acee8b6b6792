#!/bin/bash
# Streaming memory of a full-depth SD3.5-large MMDiT (38 joint blocks, width 2432, RMS qk-norm,
# 8B, q8_0): one 1024x1024 step with --params-backend disk under /usr/bin/time -v; prints the
# seconds a step and the peak RSS (the aim: under 4 GB). --cfg-scale 1: one MMDiT pass a step.
#
#   bench/sd35_stream_rss.sh [BUILD_DIR] [BIG_DIR]      (THREADS=1 by default)
#
# Makes BIG_DIR/sd35_large_q8_0.gguf (8.6 GB) with bench/make_sd35_large_q8.py from the
# manifest bench/sd35_large.tsv when it is missing (about 5 minutes on one core; delete it
# afterwards). The text encoders and VAE are the SD3 reference cases' fixtures
# (build/fixture-cache/flux and sd3: CLIP-L, bigG, 2-layer T5-XXL, the 16-channel VAE).
# Not part of the test suite.
# Measured 2026-12-02 (-t 1: one core, the other running the suite; the 2-core machine shared,
# load ~4.5): peak RSS 1.11 GiB (1,168,496 kB, during the MMDiT step; the tiled VAE decode
# peaks at 0.7 GiB), 292.7 s for the step, 415 s for the image (text encoders, the step, the
# decode in tiles of 80 latents), 7:01 in all (about 6 s of loading before the image).
# The file took 5 minutes to write on one core (8.18 GiB).
source "$(dirname "$0")/bench_setup.sh"
threads=${THREADS:-1}
dit=$big/sd35_large_q8_0.gguf

if [ ! -f "$dit" ]; then
    mkdir -p "$big"
    /usr/bin/python3 "$root/bench/make_sd35_large_q8.py" "$dit"
fi
require_fixtures "the SD3 reference cases" flux/flux_ae_f32_seed11 flux/clip_l_f16_seed12 \
    flux/t5xxl_l2_f16_seed13 sd3/clip_g_f16_seed21

log=$(mktemp)
/usr/bin/time -v "$build/tools/cli/sd-cli" --diffusion-model "$dit" \
    --clip_l "$fx/flux/clip_l_f16_seed12.safetensors" --clip_g "$fx/sd3/clip_g_f16_seed21.safetensors" \
    --t5xxl "$fx/flux/t5xxl_l2_f16_seed13.safetensors" --vae "$fx/flux/flux_ae_f32_seed11.safetensors" \
    --tokenizer-dir "$fixtures/tokenizers" -p "a lovely cat" --cfg-scale 1 --sampling-method euler \
    --steps 1 -W 1024 -H 1024 -s 42 --rng cuda -t "$threads" --params-backend disk -v \
    -o "$big/sd35_stream.png" >"$log" 2>&1 || { cat "$log"; exit 1; }
grep -E "MMDiT|step 1/1|sampl|decod|Elapsed|Maximum resident" "$log"
peak_rss "$log"
cp "$log" "$big/sd35_stream.log"
rm -f "$log"
