// A generation job as the queue keeps it and as the routes see it (JobSnapshot), and the
// interface of whatever runs one (JobRunner: the model, or a stand-in in the tests).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "job_spec.h"

namespace server {

enum class JobStatus { Queued, Generating, Completed, Failed, Cancelled };

// "queued", "generating", "completed", "failed", "cancelled" (the reference's names).
const char* job_status_name(JobStatus status);
inline bool is_finished(JobStatus s) {
    return s == JobStatus::Completed || s == JobStatus::Failed || s == JobStatus::Cancelled;
}

// An image of a job's result, or a vid_gen job's whole clip (frames > 0).
struct ResultImage {
    std::string b64;         // the encoded file, base64
    int64_t seed = 0;        // the seed this image was sampled with
    std::string parameters;  // the "parameters" text embedded in it (also when not embedded)
    uint32_t width = 0;
    uint32_t height = 0;
    int frames = 0;  // a clip: its frame count (the container holds them all)
};

// Sampling steps done across the whole job (every image of a batch), and the image being
// sampled (0-based).
struct JobProgress {
    int step = 0;
    int steps = 0;
    int image = 0;
    int images = 0;
};

// The latest step preview of a generating job (a PNG, base64), shown in the job's status.
struct JobPreview {
    int step = 0;   // the sampling step it shows (the reference's numbering)
    int image = 0;  // the image of the batch (0-based)
    std::string png_b64;
    uint32_t width = 0;
    uint32_t height = 0;
};

struct JobSnapshot {
    std::string id;
    std::string api;  // "sdcpp", "openai", "sdapi"
    JobStatus status = JobStatus::Queued;
    int64_t created = 0;  // unix seconds
    int64_t started = 0;  // 0: not yet
    int64_t completed = 0;
    int queue_position = 0;  // 1 = next; 0 when not queued
    JobProgress progress;
    std::shared_ptr<const std::vector<ResultImage>> images;  // set when completed
    std::shared_ptr<const JobPreview> preview;               // the latest, while generating
    std::string error_code;
    std::string error_message;
    // The request as it ran (sampler and scheduler settled); read it once the job finished.
    std::shared_ptr<const JobSpec> spec;
};

// Advances a job's progress (atomics step, steps, image, images) by the runner's step
// `step` of `steps` of the current image; a step not above the last starts the next image.
template <class Job>
void advance_progress(Job& job, int& last_step, int step, int steps) {
    if (step <= last_step) job.image = std::min(job.image + 1, job.images - 1);
    last_step = step;
    job.steps = steps * job.images;
    job.step = job.image * steps + step;
}

struct RunHooks {
    // A sampling step of the current image finished: `step` of `steps` (1-based).
    std::function<void(int step, int steps)> on_step;
    // A step preview of the current image (image left 0: the queue fills it in).
    std::function<void(JobPreview preview)> on_preview;
    // Set when the job is cancelled; the runner stops at the next step it can.
    const std::atomic<bool>* cancelled = nullptr;
};

struct RunOutcome {
    bool ok = false;
    std::vector<ResultImage> images;
    std::string error;  // why it failed
};

class JobRunner {
  public:
    virtual ~JobRunner() = default;
    // Runs one job (one at a time, on the queue's worker thread). May settle defaults in
    // `spec` (the model's sampler); must not throw.
    virtual RunOutcome run(JobSpec& spec, const RunHooks& hooks) = 0;
    // Asks the running job to stop as soon as it can; callable from any thread.
    virtual void interrupt() = 0;
};

}  // namespace server
