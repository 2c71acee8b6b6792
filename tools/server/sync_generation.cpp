// The synchronous APIs (OpenAI, webui) queue like every other job and hold their request
// until it is done.
#include "request_error.h"
#include "routes.h"

namespace server {

JobSnapshot generate_and_wait(ServerState& state, JobSpec spec, const std::string& api) {
    const std::string id = state.queue.submit(std::move(spec), api, Retention::UntilCollected);
    JobSnapshot done = state.queue.wait(id);
    switch (done.status) {
        case JobStatus::Completed:
            return done;
        case JobStatus::Cancelled:
            throw RequestError(503, "cancelled", "",
                               "the job was cancelled: " + done.error_message);
        default:
            throw RequestError(500, "generation_failed", "",
                               "the generation failed: " + done.error_message);
    }
}

}  // namespace server
