/* A C11 user of the C API: generates the sd15 reference case "txt2img_euler" and checks it
 * against the reference PNG (PSNR >= 40 dB on RGB bytes).
 *
 *   generate_c11 MODEL TOKENIZER_DIR REFERENCE_PNG
 *
 * Exit status 0 on success; prints the PSNR. Reads the PNG with libpng. */
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>

#include "stable-diffusion.h"

static void log_to_stderr(enum sd_log_level_t level, const char* text, void* data) {
    (void)data;
    if (level >= SD_LOG_INFO) fputs(text, stderr);
}

static int progress_calls = 0;
static void on_progress(int step, int steps, float time, void* data) {
    (void)time;
    (void)data;
    if (step >= 1 && step <= steps) progress_calls++;
}

/* Reads an 8-bit RGB PNG into a malloc'ed buffer; returns NULL on failure. */
static unsigned char* read_png_rgb(const char* path, unsigned* width, unsigned* height) {
    png_image image = {0};
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&image, path)) return NULL;
    image.format = PNG_FORMAT_RGB;
    unsigned char* pixels = malloc(PNG_IMAGE_SIZE(image));
    if (!pixels || !png_image_finish_read(&image, NULL, pixels, 0, NULL)) {
        free(pixels);
        png_image_free(&image);
        return NULL;
    }
    *width = image.width;
    *height = image.height;
    return pixels;
}

int main(int argc, char** argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: generate_c11 MODEL TOKENIZER_DIR REFERENCE_PNG\n");
        return 2;
    }
    setenv("SD_TOKENIZER_DIR", argv[2], 1);
    sd_set_log_callback(log_to_stderr, NULL);
    sd_set_progress_callback(on_progress, NULL);

    sd_ctx_params_t ctx_params;
    sd_ctx_params_init(&ctx_params);
    ctx_params.model_path = argv[1];
    ctx_params.n_threads = 2;
    ctx_params.rng_type = CUDA_RNG;
    sd_ctx_t* ctx = new_sd_ctx(&ctx_params);
    if (!ctx) {
        fprintf(stderr, "new_sd_ctx failed\n");
        return 1;
    }

    sd_img_gen_params_t params;
    sd_img_gen_params_init(&params);
    params.prompt = "a lovely cat";
    params.width = 256;
    params.height = 256;
    params.seed = 42;
    params.sample_params.sample_steps = 4;
    params.sample_params.guidance.txt_cfg = 7.0f;
    params.sample_params.sample_method = str_to_sample_method("euler");
    params.sample_params.scheduler = str_to_scheduler("discrete");

    sd_image_t* images = NULL;
    int count = 0;
    if (!generate_image(ctx, &params, &images, &count) || count != 1) {
        fprintf(stderr, "generate_image failed\n");
        free_sd_ctx(ctx);
        return 1;
    }

    unsigned w = 0, h = 0;
    unsigned char* want = read_png_rgb(argv[3], &w, &h);
    int status = 1;
    if (!want) {
        fprintf(stderr, "cannot read %s\n", argv[3]);
    } else if (w != images[0].width || h != images[0].height || images[0].channel != 3) {
        fprintf(stderr, "size mismatch: %ux%u vs %ux%ux%u\n", w, h, images[0].width, images[0].height,
                images[0].channel);
    } else {
        double se = 0;
        size_t n = (size_t)w * h * 3;
        for (size_t i = 0; i < n; ++i) {
            double d = (double)images[0].data[i] - want[i];
            se += d * d;
        }
        double psnr = se == 0 ? INFINITY : 20.0 * log10(255.0 / sqrt(se / (double)n));
        printf("PSNR %.2f dB, %d progress calls\n", psnr, progress_calls);
        status = psnr >= 40.0 && progress_calls == 4 ? 0 : 1;
    }
    free(want);
    free_sd_images(images, count);
    free_sd_ctx(ctx);
    return status;
}
