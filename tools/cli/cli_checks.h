// Checks of a parsed command line that need more than one value: what each mode requires,
// value ranges, and options for features this build does not have.
#pragma once

#include "cli_params.h"

namespace cli {

// Fills in mode-dependent defaults (convert writes output.gguf) and checks every value;
// throws UsageError naming the option and the value.
void check_params(CliParams& params);

// Throws UsageError naming the first option given whose feature is not built yet.
void refuse_not_built(const CliParams& params);

}  // namespace cli
