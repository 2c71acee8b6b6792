#!/usr/bin/env bash
# Installs the Debian packages the build and the tests need, skipping those already there.
# The list is the one in the README ("Install and build") and docs/building.md.
set -euo pipefail

packages=(
    g++ cmake ninja-build pkg-config nlohmann-json3-dev libcpp-httplib-dev
    libgtest-dev libgmock-dev libbenchmark-dev libpng-dev libjpeg-dev libwebp-dev libvpx-dev zlib1g-dev
    python3-numpy nodejs npm chromium libhiredis-dev libssl-dev openssl redis-server
    libvulkan-dev glslc mesa-vulkan-drivers
)

missing=()
for p in "${packages[@]}"; do
    # npm ships inside some nodejs builds (NodeSource); a working npm is enough.
    if [ "$p" = npm ] && command -v npm >/dev/null; then continue; fi
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
echo "installing: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
