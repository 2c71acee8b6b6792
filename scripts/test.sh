#!/usr/bin/env bash
# Quick start, part 2: install what is missing, build, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd build
# Every temporary file of the run (the tests', their helpers', the servers') goes to one folder,
# removed when the run ends however it ends: a test that leaves a file behind cannot fill the disk
# run after run.
run_tmp="$(mktemp -d "${TMPDIR:-/tmp}/sd-tests.XXXXXX")"
trap 'rm -rf "$run_tmp"' EXIT
export TMPDIR="$run_tmp" TEST_TMPDIR="$run_tmp"
# The `large` tests (tests/**/*_large_test.cpp) are left out: `ctest -L large` runs them.
ctest --output-on-failure -j "$(nproc)" --timeout 900 -LE large
