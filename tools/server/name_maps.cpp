#include "name_maps.h"

#include <algorithm>
#include <cctype>

namespace server {
namespace {

struct SamplerLabel {
    sample_method_t method;
    const char* label;  // the webui's
    const char* k_alias;
};

const SamplerLabel kSamplerLabels[] = {
    {EULER_SAMPLE_METHOD, "Euler", "k_euler"},
    {EULER_A_SAMPLE_METHOD, "Euler a", "k_euler_a"},
    {HEUN_SAMPLE_METHOD, "Heun", "k_heun"},
    {DPM2_SAMPLE_METHOD, "DPM2", "k_dpm_2"},
    {DPMPP2S_A_SAMPLE_METHOD, "DPM++ 2S a", "k_dpmpp_2s_a"},
    {DPMPP2M_SAMPLE_METHOD, "DPM++ 2M", "k_dpmpp_2m"},
    {DPMPP2M_SDE_SAMPLE_METHOD, "DPM++ 2M SDE", "k_dpmpp_2m_sde"},
    {LMS_SAMPLE_METHOD, "LMS", "k_lms"},
    {LCM_SAMPLE_METHOD, "LCM", "k_lcm"},
    {DDIM_TRAILING_SAMPLE_METHOD, "DDIM", "ddim"},
    {TCD_SAMPLE_METHOD, "TCD", "tcd"},
    {IPNDM_SAMPLE_METHOD, "iPNDM", "ipndm"},
    {IPNDM_V_SAMPLE_METHOD, "iPNDM_v", "ipndm_v"},
    {RES_MULTISTEP_SAMPLE_METHOD, "Res Multistep", "k_res_multistep"},
    {EULER_CFG_PP_SAMPLE_METHOD, "Euler CFG++", "k_euler_cfg_pp"},
    {EULER_A_CFG_PP_SAMPLE_METHOD, "Euler a CFG++", "k_euler_a_cfg_pp"},
};

struct SchedulerLabel {
    scheduler_t scheduler;
    const char* label;
};

// The webui's "Automatic" is the model's default; "Uniform" and "Normal" are its names for
// the discrete schedule.
const SchedulerLabel kSchedulerLabels[] = {
    {DISCRETE_SCHEDULER, "Uniform"},
    {DISCRETE_SCHEDULER, "Normal"},
    {KARRAS_SCHEDULER, "Karras"},
    {EXPONENTIAL_SCHEDULER, "Exponential"},
    {AYS_SCHEDULER, "Align Your Steps"},
    {SGM_UNIFORM_SCHEDULER, "SGM Uniform"},
    {SIMPLE_SCHEDULER, "Simple"},
    {KL_OPTIMAL_SCHEDULER, "KL Optimal"},
    {BETA_SCHEDULER, "Beta"},
    {GITS_SCHEDULER, "Align Your Steps GITS"},
};

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

bool is_default(const std::string& lowered) {
    return lowered.empty() || lowered == "default" || lowered == "automatic";
}

std::optional<sample_method_t> method_from_name(const std::string& lowered) {
    const sample_method_t native = str_to_sample_method(lowered.c_str());
    if (native != SAMPLE_METHOD_COUNT) return native;
    for (const SamplerLabel& s : kSamplerLabels)
        if (lowered == lower(s.label) || lowered == s.k_alias) return s.method;
    return std::nullopt;
}

}  // namespace

std::optional<SamplerChoice> sampler_from_name(const std::string& name) {
    const std::string lowered = lower(name);
    if (is_default(lowered)) return SamplerChoice{};
    if (auto method = method_from_name(lowered)) return SamplerChoice{*method, SCHEDULER_COUNT};
    // Older webui labels carry the schedule: "DPM++ 2M Karras", "Euler a Exponential".
    for (const SchedulerLabel& s : kSchedulerLabels) {
        const std::string suffix = " " + lower(s.label);
        if (lowered.size() > suffix.size() &&
            lowered.compare(lowered.size() - suffix.size(), suffix.size(), suffix) == 0) {
            if (auto method = method_from_name(lowered.substr(0, lowered.size() - suffix.size())))
                return SamplerChoice{*method, s.scheduler};
        }
    }
    return std::nullopt;
}

std::optional<scheduler_t> scheduler_from_name(const std::string& name) {
    const std::string lowered = lower(name);
    if (is_default(lowered)) return SCHEDULER_COUNT;
    const scheduler_t native = str_to_scheduler(lowered.c_str());
    if (native != SCHEDULER_COUNT) return native;
    for (const SchedulerLabel& s : kSchedulerLabels)
        if (lowered == lower(s.label)) return s.scheduler;
    return std::nullopt;
}

const char* webui_sampler_label(sample_method_t method) {
    for (const SamplerLabel& s : kSamplerLabels)
        if (s.method == method) return s.label;
    return nullptr;
}

const char* webui_scheduler_label(scheduler_t scheduler) {
    for (const SchedulerLabel& s : kSchedulerLabels)
        if (s.scheduler == scheduler) return s.label;
    return nullptr;
}

std::vector<std::string> sampler_aliases(sample_method_t method) {
    std::vector<std::string> out;
    for (const SamplerLabel& s : kSamplerLabels)
        if (s.method == method) out.push_back(s.k_alias);
    return out;
}

std::vector<std::string> native_sampler_names() {
    std::vector<std::string> out;
    for (int i = 0; i < SAMPLE_METHOD_COUNT; ++i)
        out.push_back(sd_sample_method_name(static_cast<sample_method_t>(i)));
    return out;
}

std::vector<std::string> native_scheduler_names() {
    std::vector<std::string> out;
    for (int i = 0; i < SCHEDULER_COUNT; ++i)
        out.push_back(sd_scheduler_name(static_cast<scheduler_t>(i)));
    return out;
}

}  // namespace server
