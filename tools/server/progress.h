// The library reports sampling progress through one process-wide callback
// (sd_set_progress_callback); this relays it to the hooks of the job running now and, when
// that job has been cancelled, repeats the cancellation to the library at every step (a
// cancel that arrives before generate_image starts would otherwise be reset by it). Step
// previews (sd_set_preview_callback) go the same way, encoded as PNG.
#pragma once

#include "job.h"
#include "stable-diffusion.h"

namespace server {

struct PreviewOptions {
    preview_t mode = PREVIEW_PROJ;
    int interval = 1;
    bool noisy = false;  // the model's noisy input instead of the denoised prediction
};

// Installs the relay for `ctx` while it lives; one at a time.
class ProgressRelay {
  public:
    ProgressRelay(sd_ctx_t* ctx, const PreviewOptions& preview);
    ~ProgressRelay();
    ProgressRelay(const ProgressRelay&) = delete;
    ProgressRelay& operator=(const ProgressRelay&) = delete;

    // Directs the progress to `hooks` while the returned scope lives.
    class Scope {
      public:
        Scope(ProgressRelay& relay, const RunHooks& hooks);
        ~Scope();

      private:
        ProgressRelay& relay_;
    };

  private:
    static void on_progress(int step, int steps, float seconds, void* data);
    static void on_preview(int step, int frame_count, sd_image_t* frames, bool is_noisy,
                           void* data);

    sd_ctx_t* ctx_;
    std::atomic<const RunHooks*> hooks_{nullptr};
};

}  // namespace server
