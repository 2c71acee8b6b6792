#!/usr/bin/env bash
# Prepares the client tests of sd-server (run by CTest before them):
#   setup.sh BUILD_DIR SERVER_FIXTURE_PATH_PROGRAM
# installs the npm packages `openai` and `playwright-core` into BUILD_DIR/server-clients
# (once; the browser is Debian's chromium, playwright downloads none), and writes there
# chromium.txt (the browser's path) and fixture.txt (the path of the sd15 fixture
# checkpoint, generated when missing).
set -euo pipefail
build_dir=$1
fixture_program=$2
dir="$build_dir/server-clients"
mkdir -p "$dir"
cd "$dir"

for tool in node npm; do
    command -v "$tool" >/dev/null || { echo "error: $tool is missing (scripts/install-deps.sh)" >&2; exit 1; }
done
chromium=${CHROMIUM:-}
for candidate in /usr/bin/chromium /usr/bin/chromium-browser /snap/bin/chromium; do
    [ -n "$chromium" ] || [ ! -x "$candidate" ] || chromium=$candidate
done
[ -n "$chromium" ] && [ -x "$chromium" ] ||
    { echo "error: no chromium found (scripts/install-deps.sh; or set CHROMIUM)" >&2; exit 1; }

if [ ! -f package.json ]; then
    printf '{ "name": "sd-server-clients", "private": true }\n' > package.json
fi
# The newest playwright-core wants Node 20; 1.54 still runs on Debian 12's Node 18.
playwright=playwright-core@^1
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
    playwright=playwright-core@~1.54.2
fi
if [ ! -d node_modules/openai ] || [ ! -d node_modules/playwright-core ]; then
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --no-audit --no-fund --loglevel=error \
        openai@^4 "$playwright"
fi
node -e 'require("openai"); require("playwright-core"); console.log("npm packages ready")'

echo "$chromium" > chromium.txt
"$fixture_program" > fixture.txt.tmp
mv fixture.txt.tmp fixture.txt
echo "chromium: $chromium"
echo "fixture: $(cat fixture.txt)"
