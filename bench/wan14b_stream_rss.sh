#!/bin/bash
# Streaming memory of a full-size Wan 2.1 14B (q8_0): one step of a 832x480 clip with
# --params-backend disk under /usr/bin/time -v; prints the phases and the peak RSS (the aim:
# under 4 GB at 17 frames).
#
#   bench/wan14b_stream_rss.sh [BUILD_DIR] [BIG_DIR] [FRAMES (17)]
#
# Makes BIG_DIR/wan21_14b_q8_0.gguf (14.3 GiB) with bench/make_wan14b_q8.py when it is missing
# (delete it afterwards). The UMT5 encoder (2 blocks at full width) and the Wan 2.1 VAE are the
# Wan fixtures' (build/fixture-cache/wan), the vocabulary the shared fixtures' UMT5 one; the
# decode is tiled, as the streamed mode picks. One pass a step (--cfg-scale 1). Not part of
# the test suite. Checked 2026-12-04 (-t 2): the file loads and streams (sd-bench at 64x64 x 1
# frame: a pass 38 s, peak RSS 708 MiB); 832x480 x 17 frames (7,800 tokens): the pass 1405 s
# (~240 TFLOP by hand, ~170 GFLOP/s), the tiled decode 232 s, 27 min in all, peak RSS 2.07 GiB.
source "$(dirname "$0")/bench_setup.sh"
frames=${3:-17}
dit=$big/wan21_14b_q8_0.gguf

if [ ! -f "$dit" ]; then
    mkdir -p "$big"
    /usr/bin/python3 "$root/bench/make_wan14b_q8.py" "$dit"
fi
require_fixtures "the Wan tests" wan/umt5_xxl_l2_bf16_seed61 wan/wan21_vae_f32_seed42

log=$(mktemp)
/usr/bin/time -v "$build/tools/cli/sd-cli" -M vid_gen --diffusion-model "$dit" \
    --t5xxl "$fx/wan/umt5_xxl_l2_bf16_seed61.safetensors" \
    --vae "$fx/wan/wan21_vae_f32_seed42.safetensors" --tokenizer-dir "$fixtures/tokenizers" \
    -p "a lovely cat walking on the grass" --cfg-scale 1 --steps 1 -W 832 -H 480 \
    --video-frames "$frames" -s 42 -t 2 --params-backend disk \
    -o "$big/wan14b_stream_%03d.png" >"$log" 2>&1 || { cat "$log"; exit 1; }
tr '\r' '\n' <"$log" | grep -E "Wan:|UMT5|step 1/1|encoded in|sampling done|tiles of|decoded in|Elapsed|Maximum resident"
peak_rss "$log"
rm -f "$log"
