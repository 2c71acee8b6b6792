#!/bin/bash
# Streaming memory of a full-depth Qwen-Image (20.4B, q4_K) with a q4_K Qwen2.5-VL-7B: one
# 1024x1024 step with --params-backend disk under /usr/bin/time -v; prints the phases and the
# peak RSS (the aim: under 4 GB).
#
#   bench/qwen_image_stream_rss.sh [BUILD_DIR] [BIG_DIR]
#
# Makes BIG_DIR/qwen_image_full_q4_K.gguf (11.5 GB) and BIG_DIR/qwen2_5_vl_7b_q4_K.gguf (4.6 GB)
# with bench/make_qwen_image_full_q4k.py when they are missing (delete them afterwards). The
# VAE is the Wan 2.1 fixture's (build/fixture-cache/wan), the vocabulary the shared fixtures'
# Qwen2 one; the streamed mode decodes in tiles (the family's footprint). One pass a step
# (--cfg-scale 1). Not part of the test suite. Measured 2026-12-04 (-t 2): the files 10.73 and
# 4.25 GiB; prompt encoded in 4.8 s, the step 377 s (68 TFLOP: ~180 GFLOP/s), the decode in
# tiles of 44 latent pixels 62.6 s, 7:25 in all, peak RSS 1.18 GiB (1,239,808 kB).
source "$(dirname "$0")/bench_setup.sh"
dit=$big/qwen_image_full_q4_K.gguf
llm=$big/qwen2_5_vl_7b_q4_K.gguf

if [ ! -f "$dit" ] || [ ! -f "$llm" ]; then
    mkdir -p "$big"
    /usr/bin/python3 "$root/bench/make_qwen_image_full_q4k.py" "$dit" "$llm"
fi
require_fixtures "the Wan tests" wan/wan21_vae_f32_seed42

log=$(mktemp)
/usr/bin/time -v "$build/tools/cli/sd-cli" --diffusion-model "$dit" --llm "$llm" \
    --vae "$fx/wan/wan21_vae_f32_seed42.safetensors" --tokenizer-dir "$fixtures/tokenizers" \
    -p "a cinematic photograph of a hooded figure walking through a rainy city at night" \
    --cfg-scale 1 --steps 1 -W 1024 -H 1024 -s 42 -t 2 --params-backend disk \
    -o "$big/qwen_image_stream.png" >"$log" 2>&1 || { cat "$log"; exit 1; }
tr '\r' '\n' <"$log" | grep -E "Qwen-Image|LLM|low-memory|step 1/1|encoded in|sampling done|decoded in|Elapsed|Maximum resident"
peak_rss "$log"
rm -f "$log"
