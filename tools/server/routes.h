// The HTTP routes, one file per API family:
//   routes_openai.cpp  /v1/images/generations, /v1/images/edits, /v1/models
//   routes_sdapi.cpp   /sdapi/v1/* (AUTOMATIC1111 webui)
//   routes_sdcpp.cpp   /sdcpp/v1/* (native async jobs)
//   routes_web.cpp     / and its assets, /health
// and routes.cpp, which installs them all with the error handling of http_json.h.
#pragma once

#include <httplib.h>

#include "job.h"
#include "server_state.h"

namespace server {

// Every route, the body limit, CORS and the error and exception handlers: the whole server.
void register_routes(httplib::Server& svr, ServerState& state);

void register_openai_routes(httplib::Server& svr, ServerState& state);
void register_sdapi_routes(httplib::Server& svr, ServerState& state);
void register_sdcpp_routes(httplib::Server& svr, ServerState& state);
void register_web_routes(httplib::Server& svr, ServerState& state);

// Queues `spec` and waits until its images are ready (the synchronous APIs). A failed job
// is a RequestError 500, a cancelled one 503.
JobSnapshot generate_and_wait(ServerState& state, JobSpec spec, const std::string& api);

}  // namespace server
