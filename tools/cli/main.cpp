// sd-cli: parse the command line, check it, run the mode. Every error ends the program
// with a message and exit code 1; nothing aborts.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

#include "cli_checks.h"
#include "cli_options.h"
#include "log_output.h"
#include "metadata_report.h"
#include "modes.h"

namespace {

std::string version_string() {
    return std::string("sd-cli (stable-diffusion engine) version ") + sd_version() + ", commit " +
           sd_commit();
}

int list_devices() {
    std::printf("List of available devices:\nName\tDescription\n-------------------\n");
    std::string devices(sd_list_devices(nullptr, 0) + 1, '\0');
    devices.resize(sd_list_devices(devices.data(), devices.size()));
    std::printf("%s", devices.c_str());
    return 0;
}

int run_metadata(const cli::CliParams& p) {
    cli::MetadataOptions options;
    options.json = p.metadata_format == "json";
    options.include_raw = p.metadata_raw;
    options.brief = p.metadata_brief;
    options.include_structural = p.metadata_all;
    cli::print_metadata_report(p.image_path, options, std::cout);
    return 0;
}

int run_mode(cli::CliParams& p) {
    cli::check_params(p);
    if (p.mode == cli::Mode::Metadata) return run_metadata(p);
    cli::refuse_not_built(p);
    cli::log_debug("%s", version_string().c_str());
    cli::log_debug("%s", sd_get_system_info());
    switch (p.mode) {
        case cli::Mode::Convert:
            return cli::run_convert(p);
        case cli::Mode::Upscale:
            return cli::run_upscale(p);
        default:
            return cli::run_generate(p);
    }
}

}  // namespace

int main(int argc, const char* argv[]) {
    if (argc > 1 && std::string(argv[1]) == "--version") {
        std::cout << version_string() << "\n";
        return 0;
    }
    cli::CliParams params;
    try {
        cli::parse_command_line(argc, argv, params);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    if (params.help) {
        std::cout << version_string() << "\n";
        cli::print_help(std::cout, argv[0]);
        return 0;
    }
    if (params.list_devices) return list_devices();
    if (params.list_families) {
        std::cout << sd_model_families_table();
        return 0;
    }
    cli::set_log_settings({params.verbose, params.color});
    cli::install_library_log();
    try {
        return run_mode(params);
    } catch (const cli::UsageError& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
    } catch (const std::exception& e) {
        cli::log_error("%s", e.what());
    }
    return 1;
}
