// The synchronous APIs (OpenAI, webui) queue like every other job and hold their request
// until it is done, or until their client disconnects, which cancels the job.
#include "http_server.h"
#include "request_error.h"
#include "routes.h"

namespace server {

JobSnapshot generate_and_wait(ServerState& state, JobSpec spec, const std::string& api) {
    const std::string id = state.queue.submit(std::move(spec), api, Retention::UntilCollected);
    // A client that hangs up while it waits has its job cancelled: nobody would read it.
    JobSnapshot done = state.queue.wait(id, client_disconnected);
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
