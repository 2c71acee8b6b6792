/* Functions of this engine that the reference C API has no slot for. Everything in
 * stable-diffusion.h keeps the reference's exact ABI; what is ours lives here, sd_-prefixed. */
#ifndef __STABLE_DIFFUSION_EXT_H__
#define __STABLE_DIFFUSION_EXT_H__

#include "stable-diffusion.h"

#define SD_DEFAULT_MAX_PROMPT_TOKENS 1500 /* 20 CLIP chunks of 75 */
#define SD_MAX_PROMPT_BYTES_PER_TOKEN 32  /* the byte check before tokenizing */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Context options of this engine, typed ----------------------------------------------
 * The reference's sd_ctx_params_t has no field for them. They reach the library in
 * sd_ctx_ext_params_t, through new_sd_ctx_ext, never encoded into a string. tokenizer_dir and
 * compute_type left unset (as sd_ctx_ext_params_init leaves them) take the value of the same
 * key of sd_ctx_params_t::model_args, else the default: a set field wins over model_args,
 * and model_args' compute_type= and tokenizer_dir= keep working for programs that send them
 * there. */

/* The arithmetic of the large products (linear, matmul, conv2d): f32, bf16 (AVX512-BF16 dot
 * products, f32 accumulation; f32 with a warning where the CPU has none) or auto (bf16 for the
 * products whose weights are stored in bf16, as the reference). */
enum sd_compute_type_t {
    SD_COMPUTE_TYPE_AUTO,
    SD_COMPUTE_TYPE_F32,
    SD_COMPUTE_TYPE_BF16,
    SD_COMPUTE_TYPE_COUNT /* unset */
};

/* "auto", "f32", "bf16"; NULL for any other value. */
SD_API const char* sd_compute_type_name(enum sd_compute_type_t type);
/* The inverse of sd_compute_type_name; SD_COMPUTE_TYPE_COUNT for an unknown name. */
SD_API enum sd_compute_type_t str_to_sd_compute_type(const char* name);

typedef struct {
    /* The folder of the tokenizers (DIR/clip/vocab.json + DIR/clip/merges.txt, DIR/t5/...);
     * any path, commas included. NULL or "": model_args' tokenizer_dir, else the search
     * (SD_TOKENIZER_DIR, a tokenizer/ folder beside the model, the model's GGUF metadata). */
    const char* tokenizer_dir;
    /* SD_COMPUTE_TYPE_COUNT: model_args' compute_type, else auto. */
    enum sd_compute_type_t compute_type;
    /* The most tokens (75 a CLIP chunk) a prompt and a negative prompt may each have; <= 0:
     * no limit (as sd_ctx_set_max_prompt_tokens). */
    int max_prompt_tokens;
} sd_ctx_ext_params_t;

/* Every field unset: tokenizer_dir NULL, compute_type SD_COMPUTE_TYPE_COUNT,
 * max_prompt_tokens SD_DEFAULT_MAX_PROMPT_TOKENS. */
SD_API void sd_ctx_ext_params_init(sd_ctx_ext_params_t* ext_params);

/* new_sd_ctx with this engine's typed options; ext_params NULL is new_sd_ctx. */
SD_API sd_ctx_t* new_sd_ctx_ext(const sd_ctx_params_t* sd_ctx_params,
                                const sd_ctx_ext_params_t* ext_params);

/* Whether new_sd_ctx would accept `model_args` (key=value,...): the reference's keys
 * chroma_use_dit_mask, chroma_use_t5_mask, chroma_t5_mask_pad, qwen_image_zero_cond_t and
 * ours, compute_type and tokenizer_dir. Otherwise false with the reason (naming the key) in
 * message (message_size bytes, NUL-terminated) when message is not NULL. NULL or "" is fine. */
SD_API bool sd_check_model_args(const char* model_args, char* message, size_t message_size);
/* The keys model_args takes, ", "-separated (for help texts). */
SD_API const char* sd_model_args_keys(void);

/* The model families this library recognises, as a Markdown table: each family, the models
 * users know it by, whether this build runs it, the files it takes (by sd-cli option) and its
 * default sampler / scheduler (sd-cli --list-families prints it). */
SD_API const char* sd_model_families_table(void);

/* The most tokens a prompt may have on `sd_ctx` (75 a CLIP chunk); <= 0 lifts the limit. */
SD_API void sd_ctx_set_max_prompt_tokens(sd_ctx_t* sd_ctx, int max_tokens);

/* The check generate_image makes of a prompt before it tokenizes it: no NUL byte among the
 * `length` bytes of `text`, and at most max_tokens * SD_MAX_PROMPT_BYTES_PER_TOKEN bytes
 * (max_tokens <= 0: no limit), so that a program refuses megabytes before a model loads.
 * Otherwise false with the reason, naming `what` ("prompt") and --max-prompt-tokens, in
 * message when message is not NULL. */
SD_API bool sd_check_prompt_text(const char* text, size_t length, int max_tokens, const char* what,
                                 char* message, size_t message_size);

/* ---- Requests settled once ---------------------------------------------------------------
 * generate_image settles its parameters into the request that runs: the seed (a random one
 * for seed < 0), the size (aligned up to the model's grid, with a warning), the sampling
 * method and scheduler (the model's defaults where left at SAMPLE_METHOD_COUNT /
 * SCHEDULER_COUNT, as sd_get_default_sample_method / sd_get_default_scheduler), the steps
 * (custom sigmas: their count - 1), the flow shift (INFINITY where the model is not a flow
 * model) and the hires pass's target size. sd_settle_img_gen_params runs that same resolver
 * and writes those values back into *params, so that a program reports what runs;
 * generate_image on settled parameters runs the same request (settling is idempotent).
 * Options this build does not have are refused here as generate_image refuses them. False,
 * with the reason in message when message is not NULL (else logged), for a request
 * generate_image would refuse so. Reads only what the context was made with: safe while the
 * context generates. */
SD_API bool sd_settle_img_gen_params(const sd_ctx_t* sd_ctx, sd_img_gen_params_t* params,
                                     char* message, size_t message_size);
/* The same for the fields sd_vid_gen_params_t shares with sd_img_gen_params_t (seed, size,
 * sample_params; high_noise_sample_params' method). */
SD_API bool sd_settle_vid_gen_params(const sd_ctx_t* sd_ctx, sd_vid_gen_params_t* params,
                                     char* message, size_t message_size);
/* The seed image `index` (0-based) of a batch is sampled with, from the settled seed. */
SD_API int64_t sd_batch_image_seed(int64_t seed, int index);

/* ---- Files and models --------------------------------------------------------------------- */

/* convert() with the folder of the CLIP tokenizer (DIR/clip/vocab.json, DIR/clip/merges.txt)
 * to embed in a GGUF output; NULL or "" searches as convert() does (SD_TOKENIZER_DIR, a
 * tokenizer/ folder beside the model, the model's own GGUF metadata). */
SD_API bool sd_convert_with_tokenizer(const char* input_path, const char* vae_path,
                                      const char* output_path, enum sd_type_t output_type,
                                      const char* tensor_type_rules, bool convert_name,
                                      const char* tokenizer_dir);

/* Whether the LoRA file at lora_path fits the context's model: true when some of its tensors
 * match a model weight by name and size (read from the file's header; nothing is applied).
 * Otherwise false, with a one-line reason naming the file and the model (and the family the
 * LoRA looks made for, where its names tell) in message (message_size bytes, NUL-terminated)
 * when message is not NULL. Safe to call while the context generates. */
SD_API bool sd_lora_fits(const sd_ctx_t* sd_ctx, const char* lora_path, char* message,
                         size_t message_size);

/* Whether the context's model takes reference images (sd_img_gen_params_t::ref_images: edit
 * models such as FLUX.1 Kontext); other models refuse a request that has them. */
SD_API bool sd_takes_ref_images(const sd_ctx_t* sd_ctx);

#ifdef __cplusplus
}
#endif

#endif /* __STABLE_DIFFUSION_EXT_H__ */
