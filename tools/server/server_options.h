// sd-server's command line: its own options (address, queue, limits) plus every model and
// default-generation option of sd-cli, parsed by sd-cli's own table (cli_options.h). The
// options only sd-cli has (-o, -M, --preview-path, ...) are refused.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "cli_params.h"
#include "server_config.h"

namespace server {

// Applies argv[1..]; throws cli::UsageError naming the option and the value.
void parse_server_command_line(int argc, const char* const* argv, ServerConfig& config,
                               cli::CliParams& params);

// Cross-option checks of the server's settings; throws cli::UsageError.
void check_server_config(const ServerConfig& config);

// -h: the server options, then sd-cli's context and generation options, each with its
// default.
void print_server_help(std::ostream& out, const std::string& program);

// The long names of sd-cli options the server does not take.
const std::vector<std::string>& cli_only_options();

}  // namespace server
