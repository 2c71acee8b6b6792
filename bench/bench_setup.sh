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
