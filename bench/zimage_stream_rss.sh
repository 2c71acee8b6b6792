#!/bin/bash
# Streaming memory of a full-depth Z-Image-Turbo (6.15B, q8_0) with a q8_0 Qwen3-4B: one
# 1024x1024 step with --params-backend disk under /usr/bin/time -v; prints the seconds a step
# and the peak RSS (the aim: under 3 GB).
#
#   bench/zimage_stream_rss.sh [BUILD_DIR] [BIG_DIR]
#
# Makes BIG_DIR/zimage_turbo_full_q8_0.gguf (6.5 GB) and BIG_DIR/qwen3_4b_q8_0.gguf (4.3 GB)
# with bench/make_zimage_full_q8.py when they are missing (delete them afterwards). The VAE is
# the FLUX fixture's (build/fixture-cache/flux), the vocabulary the shared fixtures' Qwen2 one.
# Not part of the test suite. Measured 2026-12-03 (-t 2, quiet): peak RSS 1.25 GiB
# (1,309,376 kB), prompt encoded in 6.9 s, the step 190 s, decode 26.6 s, 3:44 in all.
source "$(dirname "$0")/bench_setup.sh"
dit=$big/zimage_turbo_full_q8_0.gguf
llm=$big/qwen3_4b_q8_0.gguf

if [ ! -f "$dit" ] || [ ! -f "$llm" ]; then
    mkdir -p "$big"
    /usr/bin/python3 "$root/bench/make_zimage_full_q8.py" "$dit" "$llm"
fi
require_fixtures "the FLUX tests" flux/flux_ae_f32_seed11

log=$(mktemp)
/usr/bin/time -v "$build/tools/cli/sd-cli" --diffusion-model "$dit" --llm "$llm" \
    --vae "$fx/flux/flux_ae_f32_seed11.safetensors" --tokenizer-dir "$fixtures/tokenizers" \
    -p "a cinematic photograph of a hooded figure walking through a rainy city at night" \
    --cfg-scale 1 --steps 1 -W 1024 -H 1024 -s 42 -t 2 --params-backend disk \
    -o "$big/zimage_stream.png" >"$log" 2>&1 || { cat "$log"; exit 1; }
grep -E "Z-Image|LLM|step 1/1|encoded in|sampling done|decoded in|Elapsed|Maximum resident" "$log"
peak_rss "$log"
rm -f "$log"
