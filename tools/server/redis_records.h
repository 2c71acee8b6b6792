// The values the Redis queue keeps as text in a job's hash and in a worker's heartbeat, each
// written and read back here: the request a worker runs (payload), the images it made
// (result), the latest preview, the heartbeat. What comes back from Redis was written by
// another process and can be anything (a corrupt or foreign key, another version's layout), so
// the readers check every field's type: a result that cannot be read is a std::runtime_error
// naming it, an unreadable preview or heartbeat is ignored; never the JSON library's
// exception, which the routes would answer as the client's mistake.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "job.h"
#include "request_source.h"

namespace server::redis_records {

// "payload": the request as it arrived and the seed the API node settled.
struct Payload {
    RequestSource source;
    int64_t seed = 0;
};
std::string payload_text(const RequestSource& source, int64_t seed);
Payload read_payload(const std::string& text);  // throws std::runtime_error

// "result": the images of a completed job ("" reads as none).
std::string result_text(const std::vector<ResultImage>& images);
std::shared_ptr<const std::vector<ResultImage>> read_result(const std::string& text);  // throws

// "preview": the running job's latest preview; nullptr when `text` is empty or unreadable.
std::string preview_text(const JobPreview& preview);
std::shared_ptr<const JobPreview> read_preview(const std::string& text);

// sdq:worker:{name}: a worker's heartbeat. read_heartbeat leaves fields it cannot read empty.
struct Heartbeat {
    std::string name, model, job;
    int pid = 0;
};
std::string heartbeat_text(const Heartbeat& beat);
Heartbeat read_heartbeat(const std::string& text);
Heartbeat read_heartbeat_json(const nlohmann::json& beat);  // parsed already

}  // namespace server::redis_records
