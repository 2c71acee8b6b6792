/* A minimal binding, written only from stable-diffusion.h as its users see it: load a model,
 * txt2img, img2img from that result, upscale (which may be unavailable: new_upscaler_ctx then
 * returns NULL and the binding carries on), free everything. Run by c_api/c_api_test.cpp, and
 * under ASan + UBSan in a sanitizer build.
 *
 *   minimal_binding MODEL ESRGAN_MODEL [SIZE [STEPS]]
 *
 * Exit status 0 when every call behaved as the header documents; prints one line a step. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stable-diffusion.h"

static int error_lines = 0;

static void on_log(enum sd_log_level_t level, const char* text, void* data) {
    (void)data;
    if (level >= SD_LOG_ERROR) error_lines++;
    if (level >= SD_LOG_WARN) fputs(text, stderr);
}

static bool image_ok(const char* what, const sd_image_t* image, uint32_t width, uint32_t height) {
    if (!image->data || image->width != width || image->height != height || image->channel != 3) {
        fprintf(stderr, "%s: got %ux%ux%u (data %p), want %ux%ux3\n", what, image->width,
                image->height, image->channel, (void*)image->data, width, height);
        return false;
    }
    return true;
}

/* Mean absolute difference of two images of the same size, in pixel levels. */
static double mean_abs_diff(const sd_image_t* a, const sd_image_t* b) {
    size_t n = (size_t)a->width * a->height * a->channel;
    double sum = 0;
    for (size_t i = 0; i < n; ++i) sum += abs((int)a->data[i] - (int)b->data[i]);
    return n ? sum / (double)n : 0;
}

int main(int argc, char** argv) {
    if (argc < 3 || argc > 5) {
        fprintf(stderr, "usage: minimal_binding MODEL ESRGAN_MODEL [SIZE [STEPS]]\n");
        return 2;
    }
    int size = argc > 3 ? atoi(argv[3]) : 64;
    int steps = argc > 4 ? atoi(argv[4]) : 2;
    sd_set_log_callback(on_log, NULL);

    /* A bad call fails cleanly. */
    sd_image_t* images = NULL;
    int count = -1;
    if (generate_image(NULL, NULL, &images, &count) || images != NULL || count != 0) {
        fprintf(stderr, "generate_image(NULL, ...) did not fail cleanly\n");
        return 1;
    }

    /* Load. */
    sd_ctx_params_t ctx_params;
    sd_ctx_params_init(&ctx_params);
    ctx_params.model_path = argv[1];
    ctx_params.n_threads = 2;
    sd_ctx_t* ctx = new_sd_ctx(&ctx_params);
    if (!ctx) {
        fprintf(stderr, "new_sd_ctx failed\n");
        return 1;
    }
    printf("loaded %s\n", argv[1]);
    int status = 1;
    sd_image_t* first = NULL;
    int first_count = 0;
    sd_image_t* second = NULL;
    int second_count = 0;
    upscaler_ctx_t* upscaler = NULL;

    /* txt2img. */
    sd_img_gen_params_t params;
    sd_img_gen_params_init(&params);
    params.prompt = "a lovely cat";
    params.negative_prompt = "blurry";
    params.width = size;
    params.height = size;
    params.seed = 7;
    params.sample_params.sample_steps = steps;
    params.sample_params.sample_method = EULER_A_SAMPLE_METHOD;
    if (!generate_image(ctx, &params, &first, &first_count) || first_count != 1) {
        fprintf(stderr, "txt2img failed\n");
        goto done;
    }
    if (!image_ok("txt2img", &first[0], (uint32_t)size, (uint32_t)size)) goto done;
    printf("txt2img %ux%u\n", first[0].width, first[0].height);

    /* img2img from the txt2img result. */
    params.init_image = first[0];
    params.strength = 0.6f;
    params.prompt = "a lovely dog";
    if (!generate_image(ctx, &params, &second, &second_count) || second_count != 1) {
        fprintf(stderr, "img2img failed\n");
        goto done;
    }
    if (!image_ok("img2img", &second[0], (uint32_t)size, (uint32_t)size)) goto done;
    printf("img2img %ux%u, mean difference from its init image %.2f levels\n", second[0].width,
           second[0].height, mean_abs_diff(&first[0], &second[0]));

    /* Upscale: when the upscaler cannot be made the binding reports it and goes on. */
    int errors_before = error_lines;
    upscaler = new_upscaler_ctx(argv[2], false, 2, 0, NULL, NULL);
    if (!upscaler) {
        if (error_lines == errors_before) {
            fprintf(stderr, "new_upscaler_ctx returned NULL without logging why\n");
            goto done;
        }
        printf("upscaler unavailable (logged); skipped\n");
    } else {
        int factor = get_upscale_factor(upscaler);
        sd_image_t* big = NULL;
        int big_count = 0;
        if (!upscale(upscaler, second[0], (uint32_t)factor, &big, &big_count) || big_count != 1) {
            fprintf(stderr, "upscale failed\n");
            goto done;
        }
        bool ok =
            image_ok("upscale", &big[0], (uint32_t)(size * factor), (uint32_t)(size * factor));
        free_sd_images(big, big_count);
        if (!ok) goto done;
        printf("upscaled x%d\n", factor);
    }
    status = 0;

done:
    free_upscaler_ctx(upscaler);
    free_sd_images(second, second_count);
    free_sd_images(first, first_count);
    free_sd_ctx(ctx);
    printf(status == 0 ? "ok\n" : "FAILED\n");
    return status;
}
