/* Functions of this engine that the reference C API has no slot for. Everything in
 * stable-diffusion.h keeps the reference's exact ABI; what is ours lives here, sd_-prefixed. */
#ifndef __STABLE_DIFFUSION_EXT_H__
#define __STABLE_DIFFUSION_EXT_H__

#include "stable-diffusion.h"

#ifdef __cplusplus
extern "C" {
#endif

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
