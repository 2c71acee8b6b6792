#!/bin/bash
# Streaming memory of a full-depth FLUX.2-dev (32.2B, q4_K) with a q4_K Mistral-Small-3.2-24B:
# one 1024x1024 step with --params-backend disk under /usr/bin/time -v; prints the phases and
# the peak RSS (the aim: under 4 GB).
#
#   bench/flux2_dev_stream_rss.sh [BUILD_DIR] [BIG_DIR] [SIZE]
#
# Makes BIG_DIR/flux2_dev_q4_K.gguf (17.2 GiB) and BIG_DIR/mistral_small_3_2_q4_K.gguf
# (12.4 GiB) with bench/make_flux2_dev_sparse_q4k.py when they are missing: real layouts whose
# data are holes (no disk space; zero weights, so a blank image, but the same streaming, pages
# and arithmetic as real weights). The VAE is the FLUX.2 fixture's (build/fixture-cache/flux2),
# the vocabulary a tekken.json made here (fuzz/make_text_seeds.py's). One pass a step
# (--cfg-scale 1). SIZE (default 1024) is the image side. Not part of the test suite.
# Measured 2026-12-04 (-t 2, other builds running beside it part of the time): prompt encoded
# in 59.4 s, the 1024x1024 step 1695 s (~326 TFLOP: ~190 GFLOP/s), the decode in tiles of 40
# latent pixels 31.3 s, 29:47 in all, peak RSS 2.99 GiB (3,138,216 kB). At 64x64: 0.78 GiB.
source "$(dirname "$0")/bench_setup.sh"
size=${3:-1024}
dit=$big/flux2_dev_q4_K.gguf
llm=$big/mistral_small_3_2_q4_K.gguf

if [ ! -f "$dit" ] || [ ! -f "$llm" ]; then
    mkdir -p "$big"
    /usr/bin/python3 "$root/bench/make_flux2_dev_sparse_q4k.py" "$dit" "$llm"
fi
require_fixtures "the FLUX.2 tests" flux2/flux2_ae_f32_seed52
mkdir -p "$big/tokenizers/mistral"
/usr/bin/python3 -c "import sys; sys.path.insert(0, '$root/fuzz'); import make_text_seeds as m; \
sys.stdout.buffer.write(m.tekken_json())" >"$big/tokenizers/mistral/tekken.json"

log=$(mktemp)
/usr/bin/time -v "$build/tools/cli/sd-cli" --diffusion-model "$dit" --llm "$llm" \
    --vae "$fx/flux2/flux2_ae_f32_seed52.safetensors" --tokenizer-dir "$big/tokenizers" \
    -p "a cinematic photograph of a hooded figure walking through a rainy city at night" \
    --cfg-scale 1 --steps 1 -W "$size" -H "$size" -s 42 -t 2 --params-backend disk \
    -o "$big/flux2_dev_stream.png" >"$log" 2>&1 || { cat "$log"; exit 1; }
tr '\r' '\n' <"$log" | grep -E "FLUX.2|LLM|Mistral|low-memory|step 1/1|encoded in|sampling done|decoded in|Elapsed|Maximum resident"
peak_rss "$log"
rm -f "$log"
