#!/bin/bash
# An idle sd-server gives back what a generation took: starts sd-server on 127.0.0.1 with the
# SD3 fixture (the full-depth SD3 medium MMDiT, CLIP-L, CLIP-G, a 2-layer T5-XXL, the 16-channel
# VAE), reads VmRSS (/proc/PID/status) once it is loaded and idle, sends one 512x512
# generation to the OpenAI endpoint (sampling VmRSS every 0.2 s meanwhile), waits until the
# server is idle (it trims its heap after a second without work) and reads VmRSS again; then
# a second request from that idle state, and VmRSS once idle again. Prints pre / peak / post
# in MiB; exits 1 when either request leaves more than 64 MiB over the idle figure before it.
#
#   bench/server_idle_rss.sh [BUILD_DIR]
#
# Needs build/fixture-cache/sd3 and /flux (the FLUX and SD3 tests make them). Not part of the
# test suite.
# Measured 2026-12-02 (-t 2, 1 step, cfg 4.5; the 2-core machine shared with other jobs), MiB:
#                       after load  peak   idle after #1  idle after #2
#   before (1bde981)       1026     4155        89             89
#   after  (runscope)      1026     4104        36             37
# The load leaves file pages of the weights resident (smaps: 486 MiB of the MMDiT's, 496 of
# the CLIP encoders'), which the first generation's release gives back, hence post < pre; before, the kernels' thread_local scratch (Winograd's U and
# V: ~45 MB at the VAE's 512 channels, gemm and conv buffers) stayed after every request.
source "$(dirname "$0")/bench_setup.sh"
require_fixtures "the SD3 and FLUX tests" sd3/sd3_medium_f16_seed20 sd3/clip_g_f16_seed21 \
    flux/clip_l_f16_seed12 flux/t5xxl_l2_f16_seed13 flux/flux_ae_f32_seed11
steps=${STEPS:-1}
size=${SIZE:-512}

log=$(mktemp)
"$build/tools/server/sd-server" --diffusion-model "$fx/sd3/sd3_medium_f16_seed20.safetensors" \
    --clip_l "$fx/flux/clip_l_f16_seed12.safetensors" --clip_g "$fx/sd3/clip_g_f16_seed21.safetensors" \
    --t5xxl "$fx/flux/t5xxl_l2_f16_seed13.safetensors" --vae "$fx/flux/flux_ae_f32_seed11.safetensors" \
    --tokenizer-dir "$fixtures/tokenizers" -l 127.0.0.1 --listen-port 0 -t 2 \
    -W "$size" -H "$size" --steps "$steps" --cfg-scale 4.5 --sampling-method euler \
    >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; rm -f "$log"' EXIT

base=
for _ in $(seq 600); do
    base=$(grep -oE 'listening on http://[0-9.]+:[0-9]+' "$log" | head -1 | sed 's/listening on //' || true)
    [ -n "$base" ] && break
    kill -0 $pid 2>/dev/null || { cat "$log"; exit 1; }
    sleep 0.5
done
[ -n "$base" ] || { echo "sd-server did not start"; cat "$log"; exit 1; }

rss_kb() { awk '/^VmRSS:/ {print $2}' /proc/$pid/status; }
mib() { awk "BEGIN {printf \"%.0f\", $1 / 1024}"; }

sleep 3  # idle after loading
pre=$(rss_kb)
peak_file=$(mktemp)
echo "$pre" >"$peak_file"
(
    peak=$pre
    while kill -0 $pid 2>/dev/null; do
        now=$(rss_kb)
        [ -n "$now" ] && [ "$now" -gt "$peak" ] && { peak=$now; echo "$peak" >"$peak_file"; }
        sleep 0.2
    done
) &
sampler=$!
# One request, then idle: prints its seconds; the server trims its heap after a second
# without work.
generate() {
    local start code
    start=$(date +%s)
    code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$base/v1/images/generations" \
        -H 'Content-Type: application/json' \
        -d "{\"prompt\": \"a lovely cat\", \"n\": 1, \"size\": \"${size}x${size}\"}")
    [ "$code" = 200 ] || { echo "the generation answered HTTP $code" >&2; tail -20 "$log" >&2; exit 1; }
    echo $(($(date +%s) - start))
    sleep 5
}
first_s=$(generate)
post=$(rss_kb)
# A second request from that idle state: what one more generation leaves behind once the
# load's pages (text encoders read at load, released after the first run) are gone.
second_s=$(generate)
post2=$(rss_kb)
kill $sampler 2>/dev/null
peak=$(cat "$peak_file")
rm -f "$peak_file"
echo "SD3 ${size}x${size}, $steps step(s), -t 2: generations $first_s s and $second_s s"
echo "VmRSS after load (pre) $(mib "$pre") MiB, peak $(mib "$peak") MiB, idle after the request" \
    "(post) $(mib "$post") MiB: post - pre $(mib $((post - pre))) MiB"
echo "second request from that idle state: idle after it $(mib "$post2") MiB" \
    "($(mib $((post2 - post))) MiB against the idle figure before it)"
[ $((post - pre)) -le $((64 * 1024)) ] && [ $((post2 - post)) -le $((64 * 1024)) ] ||
    { echo "more than 64 MiB stays after a request"; exit 1; }
