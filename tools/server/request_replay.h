// Both ends of sending a request through the Redis queue: the form parts of a multipart
// request as JSON (the API node), and the JobSpec a worker builds from a RequestSource
// with the same parsers the API node used, keeping the seed the API node parsed (< 0: the
// worker's library draws one when it settles the job).
#pragma once

#include <cstdint>
#include <vector>

#include "requests.h"

namespace server {

nlohmann::json form_parts_json(const std::vector<FormPart>& parts);

// Throws RequestError as the parsers do (a worker whose options differ from the API
// node's may refuse what the API node accepted) and for an unknown kind.
JobSpec replay_request(const RequestSource& source, int64_t seed, const ParseContext& ctx);

}  // namespace server
