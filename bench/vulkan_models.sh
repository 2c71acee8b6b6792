#!/bin/bash
# The GPU benchmark: SD 1.5 at 512x512, SDXL at 1024x1024 and FLUX.1-dev (2+2 blocks, full
# width) at 1024x1024 on a Vulkan device, through sd-bench-vulkan --model: seconds per
# diffusion-model pass, per sampling step (two passes with CFG) and for the VAE decode, each
# with GFLOP/s and % of the device's measured FP32 peak, and the device memory peak. The
# fixtures are generated into the tests' cache when missing (mkckpt.py: about 12 GB in all).
#
#   bench/vulkan_models.sh [BUILD_DIR]      (DEVICE=vulkan0, STEPS=3, MODELS="sd15 sdxl flux")
#
# Not part of the test suite. On lavapipe (Mesa's CPU device) the figures are a sanity check
# only and these sizes take hours: SIZE=256 runs every model at 256x256.
source "$(dirname "$0")/bench_setup.sh"
device=${DEVICE:-vulkan0}
steps=${STEPS:-3}
bench=$build/bench/sd-bench-vulkan
[ -x "$bench" ] || { echo "missing $bench: build with -DSD_VULKAN=ON" >&2; exit 1; }

# fixture NAME MANIFEST DTYPE SEED: fx/NAME.safetensors, made by mkckpt.py when missing.
fixture() {
    local out=$fx/$1.safetensors
    if [ ! -f "$out" ]; then
        mkdir -p "$(dirname "$out")"
        echo "making $out ..."
        /usr/bin/python3 "$fixtures/mkckpt.py" "$fixtures/manifests/$2.tsv" "$out.tmp" \
            --dtype "$3" --seed "$4" >/dev/null
        mv "$out.tmp" "$out"
    fi
    echo "$out"
}

for m in ${MODELS:-sd15 sdxl flux}; do
    echo "== $m on $device"
    case $m in
    sd15)
        "$bench" --device "$device" --model "$(fixture sd15_f16_seed1 sd15 f16 1)" \
            --tokenizer-dir "$fixtures/tokenizers" -W "${SIZE:-512}" -H "${SIZE:-512}" \
            --steps "$steps" ;;
    sdxl)
        "$bench" --device "$device" --model "$(fixture sdxl_f16_seed3 sdxl f16 3)" \
            --tokenizer-dir "$fixtures/tokenizers" -W "${SIZE:-1024}" -H "${SIZE:-1024}" \
            --steps "$steps" ;;
    flux)
        "$bench" --device "$device" \
            --diffusion-model "$(fixture flux/flux_dev_d2s2_bf16_seed10 flux_dev_d2s2 bf16 10)" \
            --vae "$(fixture flux/flux_ae_f32_seed11 flux_ae f32 11)" \
            --clip_l "$(fixture flux/clip_l_f16_seed12 clip_l f16 12)" \
            --t5xxl "$(fixture flux/t5xxl_l2_f16_seed13 t5xxl_l2 f16 13)" \
            --tokenizer-dir "$fixtures/tokenizers" --cfg-scale 1 \
            -W "${SIZE:-1024}" -H "${SIZE:-1024}" --steps "$steps" ;;
    *) echo "unknown model '$m' (sd15, sdxl, flux)" >&2; exit 1 ;;
    esac
done
