#!/usr/bin/env bash
# Quick start, part 1: install what is missing, build Release, generate an image.
#
# With no real model at hand, the main job runs on the SD 1.5 fixture checkpoint: the real
# SD 1.5 layout with deterministic random weights, made once by ../shared/fixtures/mkckpt.py
# (2 GiB, build/fixture-cache/). Its pictures are structured noise, not art: what it shows
# is the whole program working (tokenizer, CLIP, UNet, sampler, VAE, PNG with parameters),
# and it is the image the reference program makes from the same file.
#
#   scripts/main.sh                      # output.png from the fixture
#   MODEL=sd15.safetensors scripts/main.sh -p "a photo of a cat"   # a real checkpoint
#
# Extra arguments go to sd-cli. The kernel benchmark is build/bench/sd-bench.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
fixtures=../shared/fixtures
model="${MODEL:-}"
if [ -z "$model" ]; then
    model=build/fixture-cache/sd15_f16_seed1.safetensors
    if [ ! -f "$model" ]; then
        mkdir -p build/fixture-cache
        echo "making the SD 1.5 fixture checkpoint (about 20 s, 2 GiB)..."
        /usr/bin/python3 "$fixtures/mkckpt.py" "$fixtures/manifests/sd15.tsv" "$model.tmp" --dtype f16 --seed 1
        mv "$model.tmp" "$model"
    fi
fi
./build/tools/cli/sd-cli -m "$model" --tokenizer-dir "$fixtures/tokenizers" \
    -p "a lovely cat" --steps 4 -W 256 -H 256 -s 42 --cfg-scale 7 --sampling-method euler \
    --scheduler discrete --rng cuda -o output.png "$@"
echo "wrote output.png"
