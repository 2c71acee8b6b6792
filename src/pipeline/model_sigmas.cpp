#include "pipeline/model_sigmas.h"

namespace sd {

std::vector<float> model_sigmas(const ModelComponents& m, const Denoiser& d, Scheduler scheduler,
                                int steps, int64_t width, int64_t height, bool request_shift) {
    SchedulerOptions options;
    options.ays_table = m.ays_table;
    options.image_tokens = latent_tokens(m.latent, width, height);
    if (m.shift_from_tokens && !request_shift) {
        const FluxFlowSchedule shifted(flux2_empirical_mu(options.image_tokens, steps));
        return scheduler_sigmas(scheduler, steps, shifted, options);
    }
    return scheduler_sigmas(scheduler, steps, d.schedule(), options);
}

}  // namespace sd
