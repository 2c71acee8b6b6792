#!/bin/bash
# Streaming memory of a full-depth FLUX.1-dev (19 double + 38 single blocks, 12B, q8_0):
# one 512x512 step with --params-backend disk under /usr/bin/time -v; prints the seconds a
# step and the peak RSS (the aim: under 4 GB, so a 16 GB machine runs it).
#
#   bench/flux_stream_rss.sh [BUILD_DIR] [BIG_DIR]
#
# Makes BIG_DIR/flux1_dev_full_q8_0.gguf (12.7 GB) with bench/make_flux_full_q8.py when it
# is missing (tens of minutes on 2 cores; delete it afterwards). The text encoders and VAE
# are the FLUX fixture's (build/fixture-cache/flux: 2-layer T5-XXL, CLIP-L, the VAE).
# Not part of the test suite. Measured 2026-12-02 (-t 2, the 2-core machine shared by seven
# jobs, load ~11): peak RSS 0.67 GiB (704,796 kB), 464 s for the step, 8:58 in all.
# make_flux_full_q8.py --part FIRST:END lets several processes fill the file in parallel.
source "$(dirname "$0")/bench_setup.sh"
dit=$big/flux1_dev_full_q8_0.gguf

if [ ! -f "$dit" ]; then
    mkdir -p "$big"
    /usr/bin/python3 "$root/bench/make_flux_full_q8.py" "$dit"
fi
require_fixtures "the FLUX tests" flux/flux_ae_f32_seed11 flux/clip_l_f16_seed12 flux/t5xxl_l2_f16_seed13

log=$(mktemp)
/usr/bin/time -v "$build/tools/cli/sd-cli" --diffusion-model "$dit" \
    --t5xxl "$fx/flux/t5xxl_l2_f16_seed13.safetensors" --clip_l "$fx/flux/clip_l_f16_seed12.safetensors" \
    --vae "$fx/flux/flux_ae_f32_seed11.safetensors" --tokenizer-dir "$fixtures/tokenizers" \
    -p "a lovely cat holding a sign" --cfg-scale 1 --guidance 3.5 --sampling-method euler \
    --steps 1 -W 512 -H 512 -s 42 --rng cuda -t 2 --params-backend disk \
    -o "$big/flux_stream.png" >"$log" 2>&1 || { cat "$log"; exit 1; }
grep -E "FLUX|step 1/1|Elapsed|Maximum resident" "$log"
peak_rss "$log"
rm -f "$log"
