#!/usr/bin/env bash
# Quick start, part 1: install what is missing, build Release, generate an image.
#
#   MODEL=v1-5-pruned-emaonly.safetensors scripts/main.sh -p "a photo of a cat"
#       your model, as given: sd-cli -m MODEL -o output.png and your arguments (the model's
#       own defaults: size, steps, sampler; -p defaults to "a lovely cat")
#   scripts/main.sh
#       with no model at hand: the SD 1.5 fixture checkpoint, the real SD 1.5 layout filled
#       with deterministic random weights by ../shared/fixtures/mkckpt.py (2 GiB, made once
#       into build/fixture-cache/ or $SD_FIXTURE_CACHE), at 256x256 in 4 steps. Its pictures are structured noise,
#       not art: what it shows is the whole program working (tokenizer, CLIP, UNet, sampler,
#       VAE, PNG with parameters), and it is the image the reference program makes from it.
#
# Extra arguments go to sd-cli (build/tools/cli/sd-cli; sd-cli -h lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cli=./build/tools/cli/sd-cli
prompt=(-p "a lovely cat")
for arg in "$@"; do
    case "$arg" in -p | --prompt | --prompt=*) prompt=() ;; esac
done
if [ -n "${MODEL:-}" ]; then
    "$cli" -m "$MODEL" "${prompt[@]}" -o output.png "$@"
else
    cache="${SD_FIXTURE_CACHE:-build/fixture-cache}"  # the tests' cache, shared with them
    model="$cache/sd15_f16_seed1.safetensors"
    if [ ! -f "$model" ]; then
        mkdir -p "$cache"
        echo "making the SD 1.5 fixture checkpoint (about 20 s, 2 GiB)..."
        /usr/bin/python3 ../shared/fixtures/mkckpt.py ../shared/fixtures/manifests/sd15.tsv \
            "$model.tmp" --dtype f16 --seed 1
        mv "$model.tmp" "$model"
    fi
    "$cli" -m "$model" "${prompt[@]}" --steps 4 -W 256 -H 256 -s 42 --cfg-scale 7 \
        --sampling-method euler --scheduler discrete --rng cuda -o output.png "$@"
fi
echo "wrote output.png"
