// Shared by the server's fuzz targets: the command line a server (or worker) runs with.
#pragma once

#include <filesystem>
#include <iterator>
#include <string>

#include "cli_options.h"
#include "fuzz_util.h"

namespace sd::fuzz {

// `sd-server -m model.safetensors --lora-model-dir DIR`, DIR an empty folder of this
// process's own (the requests' LoRA fields look there).
inline const cli::CliParams& server_command_line() {
    static const cli::CliParams params = [] {
        const std::string loras = private_dir() + "/loras";
        std::filesystem::create_directories(loras);
        const char* args[] = {"sd-server", "-m", "model.safetensors", "--lora-model-dir",
                              loras.c_str()};
        cli::CliParams p;
        cli::parse_command_line(static_cast<int>(std::size(args)), args, p);
        return p;
    }();
    return params;
}

}  // namespace sd::fuzz
