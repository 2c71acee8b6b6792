// Field readers shared by the request parsers: sizes, steps, samplers, LoRA files, output
// formats. Each throws a RequestError naming the field.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli_params.h"
#include "generation_request.h"
#include "job_spec.h"
#include "json_fields.h"
#include "server_config.h"

namespace server {

// A width or height: within the limits and a multiple of 8.
int check_image_side(int value, const std::string& field, const ServerLimits& limits);
std::optional<int> read_image_side(const FieldReader& f, const std::string& key,
                                   const ServerLimits& limits);
// "WIDTHxHEIGHT" (OpenAI's size), each side checked; std::nullopt for "auto" or "".
std::optional<std::pair<int, int>> parse_size(const std::string& text, const std::string& field,
                                              const ServerLimits& limits);

// A sampler name in any spelling (name_maps.h) into `s`; the scheduler a webui label implies
// applies unless `scheduler_given`.
void apply_sampler_name(const std::string& name, const std::string& field, sd_sample_params_t& s,
                        bool scheduler_given);
void apply_scheduler_name(const std::string& name, const std::string& field, sd_sample_params_t& s);

// A LoRA file named relative to --lora-model-dir (with or without its extension); it must
// stay inside that folder.
std::string resolve_lora_path(const std::string& lora_dir, const std::string& name,
                              const std::string& field);
// [{path, multiplier, is_high_noise}, ...]
std::vector<cli::LoraEntry> read_loras(const FieldReader& f, const std::string& key,
                                       const std::string& lora_dir);

void apply_output_format(const std::string& name, const std::string& field, OutputOptions& out);

// An integer given as text (multipart fields).
int parse_int_text(const std::string& text, const std::string& field, int min, int max);

}  // namespace server
