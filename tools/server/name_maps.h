// Sampler and scheduler names as each API spells them: the native names ("euler_a",
// "karras"), "default" (the model's choice), and the AUTOMATIC1111 webui's labels
// ("Euler a", "DPM++ 2M Karras", "Align Your Steps") and k-diffusion aliases ("k_euler_a").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "stable-diffusion.h"

namespace server {

struct SamplerChoice {
    sample_method_t method = SAMPLE_METHOD_COUNT;  // COUNT: the model's default
    scheduler_t scheduler = SCHEDULER_COUNT;       // set when the label names one ("... Karras")
};

// std::nullopt for a name none of the spellings know. Case-insensitive.
std::optional<SamplerChoice> sampler_from_name(const std::string& name);
std::optional<scheduler_t> scheduler_from_name(const std::string& name);

// The webui's label of a sampler / scheduler, or nullptr when the webui has none.
const char* webui_sampler_label(sample_method_t method);
const char* webui_scheduler_label(scheduler_t scheduler);
// Other spellings a client may send ("k_euler_a").
std::vector<std::string> sampler_aliases(sample_method_t method);

std::vector<std::string> native_sampler_names();
std::vector<std::string> native_scheduler_names();

}  // namespace server
