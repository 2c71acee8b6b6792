# Sourced by the bench/*.sh scripts: where things are, and the checks and figures they share.
#   root: the source tree; build: $1 or root/build; big: $2 or /work/big (multi-GB files);
#   fixtures: the shared fixtures folder; fx: the generated fixtures (build/fixture-cache).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
big=${2:-/work/big}
fx=$build/fixture-cache
fixtures=${SD_FIXTURES:-$root/../shared/fixtures}
[ -d "$fixtures" ] || fixtures=/work/shared/fixtures

# require_fixtures WHAT NAME...: each fx/NAME.safetensors exists, else says to run WHAT once.
require_fixtures() {
    local what=$1
    shift
    for f in "$@"; do
        [ -f "$fx/$f.safetensors" ] || { echo "missing $fx/$f.safetensors: run $what once" >&2; exit 1; }
    done
}

# peak_rss LOG: the peak RSS that /usr/bin/time -v wrote into LOG, in GiB.
peak_rss() {
    local kb
    kb=$(awk '/Maximum resident/ {print $6}' "$1")
    echo "peak RSS: $(awk "BEGIN {printf \"%.2f\", $kb / 1048576}") GiB"
}

# timed_runs RUNS NAME SD-CLI-ARGS...: sd-cli with the arguments, RUNS times, each run's phases
# (prompt encoding, each step, the decode), its wall and CPU time and its peak RSS.
timed_runs() {
    local runs=$1 name=$2
    shift 2
    local log
    log=$(mktemp)
    for run in $(seq "$runs"); do
        /usr/bin/time -v "$build/tools/cli/sd-cli" "$@" -o "$(dirname "$log")/$name.png" \
            >"$log" 2>&1 || { cat "$log"; exit 1; }
        echo "run $run:"
        tr '\r' '\n' <"$log" | grep -E "prompt encoded|step [0-9]/|sampling done|decoded|image 1 done" | sed 's/^/  /'
        grep -E "Elapsed|User time|System time" "$log" | sed 's/^\s*/  /'
        echo "  $(peak_rss "$log")"
    done
    rm -f "$log"
}

# fresh_read_floor FILE...: the seconds to read the files into freshly allocated memory (zero
# pages until written) kept until the end, as the reference program's default loader (no
# --mmap) must before its first step: a floor under its loading on this machine.
fresh_read_floor() {
    /usr/bin/python3 - "$@" <<'PY'
import os, sys, time
start, kept, total = time.monotonic(), [], 0
for path in sys.argv[1:]:
    buf = bytearray(os.path.getsize(path))
    view, done = memoryview(buf), 0
    with open(path, "rb", buffering=0) as f:
        while done < len(buf):
            n = f.readinto(view[done:])
            if not n:
                sys.exit(f"{path}: short read")
            done += n
    kept.append(buf)
    total += len(buf)
seconds = time.monotonic() - start
print(f"reading the {total / 1e9:.2f} GB of weights into fresh memory: {seconds:.2f} s "
      f"({total / 1e9 / seconds:.2f} GB/s)")
PY
}
