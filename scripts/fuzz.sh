#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang (-fsanitize=fuzzer,address,undefined)
# into build-fuzz/ and runs each for a bounded time; see fuzz/README.md.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]   SECONDS per target (default 60), all targets if none
#   scripts/fuzz.sh --seeds                 regenerate fuzz/corpus/ (make_seeds + the torch writer)
#
# Environment: FUZZ_PARALLEL (targets at once, default 1), FUZZ_FORK (1: -fork=1, going on
# after a finding, the default; 0: plain, stopping at the first), FUZZ_ARGS (extra flags),
# CC/CXX (default clang-14/clang++-14), FUZZ_BUILD (default build-fuzz).
# Per target: the growing corpus in build-fuzz/corpus/T (seeded from fuzz/corpus/T), the
# findings in build-fuzz/artifacts/T/, the log in build-fuzz/logs/T.log.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${FUZZ_BUILD:-build-fuzz}
ALL_TARGETS=(safetensors gguf torch_checkpoint pickle tokenizer image t5_tokenizer qwen2_tokenizer options
             server_request redis_records http_connection imatrix lora_fit)

build() {
    CC=${CC:-clang-14} CXX=${CXX:-clang++-14} cmake -S fuzz -B "$BUILD" -G Ninja >/dev/null
    cmake --build "$BUILD" -j "$(nproc)"
}

seeds() {
    local out
    out=$(mktemp -d)
    "$BUILD/make_seeds" "$out"
    /usr/bin/python3 fuzz/make_text_seeds.py "$out"
    mkdir -p "$out/torch_checkpoint" "$out/pickle"
    local w=tests/io/write_torch_checkpoint.py s=$out/safetensors t=$out/torch_checkpoint
    /usr/bin/python3 $w "$s/plain.safetensors" "$t/plain.ckpt"
    /usr/bin/python3 $w "$s/plain.safetensors" "$t/sd.ckpt" --state-dict --nest
    /usr/bin/python3 $w "$s/plain.safetensors" "$t/strided.ckpt" --strided --shared --protocol 4
    /usr/bin/python3 $w "$s/plain.safetensors" "$t/params.ckpt" --parameters --folder model --protocol 3
    /usr/bin/python3 $w "$s/raw_types.safetensors" "$t/raw.ckpt" --protocol 5
    /usr/bin/python3 $w "$s/raw_types.safetensors" "$t/raw1.ckpt" --protocol 1 --shared
    for f in "$t"/*.ckpt; do
        /usr/bin/python3 -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
name = next(n for n in z.namelist() if n.endswith("/data.pkl"))
open(sys.argv[2], "wb").write(z.read(name))' "$f" "$out/pickle/$(basename "$f" .ckpt).pkl"
    done
    for t in "${ALL_TARGETS[@]}"; do
        rm -rf "fuzz/corpus/$t"
        mkdir -p "fuzz/corpus/$t"
        cp "$out/$t"/* "fuzz/corpus/$t/"
    done
    rm -rf "$out"
    echo "seeds written to fuzz/corpus/"
}

max_len() {
    case $1 in
        tokenizer | gguf | t5_tokenizer | qwen2_tokenizer) echo 16384 ;;
        options) echo 4096 ;;
        *) echo 8192 ;;
    esac
}

# Runs one target; prints its summary line.
run_target() {
    local t=$1 secs=$2
    local corpus=$BUILD/corpus/$t artifacts=$BUILD/artifacts/$t log=$BUILD/logs/$t.log
    local tmp=$BUILD/tmp/$t
    mkdir -p "$corpus" "$artifacts" "$(dirname "$log")" "$tmp"
    local mode=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
    [[ ${FUZZ_FORK:-1} == 0 ]] && mode=()
    local rc=0
    SD_FUZZ_TMP=$ROOT/$tmp timeout --kill-after=30 $((secs + 120)) \
        "$BUILD/fuzz_$t" "${mode[@]}" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -max_len="$(max_len "$t")" -dict="fuzz/dictionaries/$t.dict" \
        -artifact_prefix="$artifacts/" -print_final_stats=1 -print_funcs=0 ${FUZZ_ARGS:-} \
        "$corpus" "fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
    rm -rf "$tmp"
    local execs cov findings slow
    # Plain mode prints stat::number_of_executed_units; fork mode a "#N: cov: ..." line.
    execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' ||
        grep -o '^#[0-9]*: cov' "$log" | tail -1 | tr -dc '0-9' || true)
    cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1 || true)
    findings=$(find "$artifacts" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
        -o -name 'oom-*' \) | wc -l)
    slow=$(find "$artifacts" -type f -name 'slow-unit-*' | wc -l)
    printf '%-17s execs %-10s corpus %-6s %-22s exit %-3s findings %s%s\n' "$t" "${execs:-?}" \
        "$(find "$corpus" -type f | wc -l)" "${cov:-cov: ?}" "$rc" "$findings" \
        "$( ((findings > 0)) && echo " CRASHED (see $artifacts, $log)" || true)$( ((slow > 0)) && echo " slow units: $slow" || true)"
}

if [[ ${1:-} == --seeds ]]; then
    build
    seeds
    exit 0
fi

secs=60
if [[ ${1:-} =~ ^[0-9]+$ ]]; then
    secs=$1
    shift
fi
targets=("$@")
((${#targets[@]})) || targets=("${ALL_TARGETS[@]}")

build
echo "fuzzing ${targets[*]} for ${secs}s each, ${FUZZ_PARALLEL:-1} at a time"
running=0
for t in "${targets[@]}"; do
    [[ -x $BUILD/fuzz_$t ]] || { echo "no target $t" >&2; exit 2; }
    run_target "$t" "$secs" &
    running=$((running + 1))
    if ((running >= ${FUZZ_PARALLEL:-1})); then
        wait -n
        running=$((running - 1))
    fi
done
wait
