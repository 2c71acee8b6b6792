// The run modes of sd-cli (-M). Each returns the process exit code; errors on bad input
// are thrown (UsageError, sd::Error) and reported by main().
#pragma once

#include "cli_params.h"

namespace cli {

int run_generate(CliParams& params);  // img_gen and vid_gen
int run_convert(const CliParams& params);
int run_upscale(CliParams& params);

// Loads every --imat-in file into the library's importance matrix; false (logged) on the
// first that fails.
bool load_imatrix_inputs(const CliParams& params);

}  // namespace cli
