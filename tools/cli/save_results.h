// Writing a run's images to their -o paths (output_paths.h) with the parameters text
// embedded (image_metadata.h) unless --disable-image-metadata.
#pragma once

#include "cli_params.h"
#include "generation_request.h"
#include "result_images.h"

namespace cli {

// True when at least one image was written; each failure is logged.
bool save_results(const CliParams& params, const GenerationRequest& request,
                  const ImageList& images);

}  // namespace cli
