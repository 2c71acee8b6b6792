// The input images of a generation, read as the reference program reads them: the init,
// end and control images fitted to -W x -H (centre crop, resize), the first image setting
// the size when -W/-H are not given, the mask as grey (all white when none is given).
#pragma once

#include "cli_params.h"
#include "generation_request.h"

namespace cli {

// Loads every image the command line names into `request` and settles its width and
// height, which must be multiples of 8. Throws sd::Error (a bad file) or UsageError.
void load_input_images(const CliParams& params, GenerationRequest& request);

}  // namespace cli
