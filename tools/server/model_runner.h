// The model behind the server: one sd_ctx_t loaded from the command line's options, and
// the JobRunner that generates a JobSpec on it and encodes the images (PNG/JPEG/WebP with
// the sd-cli "parameters" text embedded).
#pragma once

#include <memory>
#include <string>

#include "cli_params.h"
#include "job.h"
#include "progress.h"
#include "result_images.h"
#include "stable-diffusion-ext.h"
#include "stable-diffusion.h"

namespace server {

class ModelRunner : public JobRunner {
  public:
    // Loads the model; nullptr (the library has logged why) when it cannot. Jobs show step
    // previews: --preview's mode (proj when not given; --preview none turns them off).
    static std::unique_ptr<ModelRunner> load(const cli::CliParams& params);
    ~ModelRunner() override;

    RunOutcome run(JobSpec& spec, const RunHooks& hooks) override;
    // Throws sd::Error (the reason) when the LoRA file fits none of the model's weights
    // (sd_lora_fits); safe while a job runs.
    void check_lora(const std::string& path) const;
    // Whether the model takes reference images (an edit model such as FLUX.1 Kontext).
    bool takes_ref_images() const { return sd_takes_ref_images(ctx_); }
    // Whether the model makes videos (vid_gen jobs: Wan).
    bool makes_video() const { return sd_ctx_supports_video_generation(ctx_); }
    void interrupt() override;

  private:
    ModelRunner(sd_ctx_t* ctx, const PreviewOptions& preview);
    RunOutcome run_job(JobSpec& spec, const RunHooks& hooks);
    bool generate(JobSpec& spec, const RunHooks& hooks, cli::ImageList& out, std::string& why);

    sd_ctx_t* ctx_;
    ProgressRelay relay_;
};

}  // namespace server
