// -M upscale: the init image (-i) run through --upscale-model --upscale-repeats times.
#include "generation_request.h"
#include "image/image_resize.h"
#include "log_output.h"
#include "modes.h"
#include "result_images.h"
#include "save_results.h"

namespace cli {

int run_upscale(CliParams& p) {
    GenerationRequest request = resolve_request(p);
    sd::image::Image input = sd::image::read_image(p.init_image_path, 3);
    if (p.width > 0 && p.height > 0)
        input =
            sd::image::fit(input, static_cast<uint32_t>(p.width), static_cast<uint32_t>(p.height));
    request.width = static_cast<int>(input.width);
    request.height = static_cast<int>(input.height);
    ImageList images = ImageList::copy_of(input);
    if (!upscale_results(p, images)) return 1;
    return save_results(p, request, images) ? 0 : 1;
}

}  // namespace cli
