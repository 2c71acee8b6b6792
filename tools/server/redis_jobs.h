// The layout of the Redis queue, shared by the API side (redis_queue.*) and the workers
// (worker_loop.*):
//   sdq:jobs:{model}   a stream per model; entries {id}; consumer group "workers"
//   sdq:job:{id}       the job's hash: status, api, model, payload (the request), entry (its
//                      stream entry), created/started/completed, step/steps/image/images,
//                      preview, result, settled, error_code/error_message, worker, cancel,
//                      attempts; given the result TTL once finished
//   sdq:gone:{id}      a tombstone, so that an expired job answers 410 rather than 404
//   sdq:stats:{model}  completed / failed / cancelled counts (written with the outcome)
//   sdq:workers        names of workers; sdq:worker:{name} their heartbeat (expires)
//   sdq:models         models seen; channels sdq:cancel and sdq:done carry job ids.
// Every change of a job's status is a WATCH / MULTI / EXEC transaction deciding with
// job_transitions.h.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "job_transitions.h"
#include "redis_client.h"

namespace server::redis_jobs {

inline const std::string kGroup = "workers";
inline const std::string kCancelChannel = "sdq:cancel";
inline const std::string kDoneChannel = "sdq:done";
inline const std::string kWorkersSet = "sdq:workers";
inline const std::string kModelsSet = "sdq:models";

inline std::string job_key(const std::string& id) {
    return "sdq:job:" + id;
}
inline std::string stream_key(const std::string& model) {
    return "sdq:jobs:" + model;
}
inline std::string tomb_key(const std::string& id) {
    return "sdq:gone:" + id;
}
inline std::string stats_key(const std::string& model) {
    return "sdq:stats:" + model;
}
inline std::string worker_key(const std::string& name) {
    return "sdq:worker:" + name;
}

using Command = std::vector<std::string>;

// A job's hash fields as read for a decision (those named, in order, after StoredJob's).
struct JobRead {
    StoredJob job;
    std::vector<std::string> extra;  // the `extra_fields` asked for, "" when missing
};

// WATCHes the job's hash, reads it, asks `decide` for the commands to run and runs them in
// MULTI / EXEC, again while another client changed the hash meanwhile. Returns what the
// last `decide` returned besides its commands (no commands: nothing is written).
template <class Result>
Result transact(RedisClient& client, const std::string& id,
                const std::vector<std::string>& extra_fields,
                const std::function<Result(const JobRead&, std::vector<Command>&)>& decide);

// The commands storing a job's outcome exactly once: status and outcome fields, the TTL,
// the stream entry acknowledged and deleted, the tombstone, the counts, the done message.
struct Outcome {
    JobStatus status = JobStatus::Completed;
    std::string error_code, error_message;
    std::string result;   // JSON of the images (completed)
    std::string settled;  // what the worker's library settled (job_spec.h settled_text)
};
std::vector<Command> finish_commands(const std::string& id, const std::string& model,
                                     const std::string& entry, const Outcome& outcome,
                                     int ttl_seconds);

// Acknowledges and deletes a stream entry.
std::vector<Command> drop_entry_commands(const std::string& model, const std::string& entry);

long long unix_now();

// The largest value Redis takes in one command argument: its proto-max-bulk-len (and its
// client-query-buffer-limit, for the whole command), 512 MiB where CONFIG is not allowed.
size_t value_limit(RedisClient& client);

}  // namespace server::redis_jobs
