// -M convert: the model (plus --vae) written as one GGUF or safetensors file of --type.
#include <string>

#include "log_output.h"
#include "modes.h"
#include "stable-diffusion-ext.h"

namespace cli {

bool load_imatrix_inputs(const CliParams& p) {
    for (const std::string& file : p.imat_in) {
        if (!load_imatrix(file.c_str())) {
            log_error("--imat-in: cannot load '%s'", file.c_str());
            return false;
        }
    }
    return true;
}

int run_convert(const CliParams& p) {
    if (!load_imatrix_inputs(p)) return 1;
    const bool ok = sd_convert_with_tokenizer(
        p.model_path.c_str(), p.vae_path.empty() ? nullptr : p.vae_path.c_str(),
        p.output_path.c_str(), p.wtype,
        p.tensor_type_rules.empty() ? nullptr : p.tensor_type_rules.c_str(), p.convert_name,
        p.tokenizer_dir.c_str());
    const char* vae = p.vae_path.empty() ? "" : p.vae_path.c_str();
    if (!ok) {
        log_error("convert '%s'/'%s' to '%s' failed", p.model_path.c_str(), vae,
                  p.output_path.c_str());
        return 1;
    }
    log_info("convert '%s'/'%s' to '%s' success", p.model_path.c_str(), vae, p.output_path.c_str());
    return 0;
}

}  // namespace cli
