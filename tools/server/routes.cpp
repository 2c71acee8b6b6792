#include "routes.h"

#include "http_json.h"

namespace server {

void register_routes(httplib::Server& svr, ServerState& state) {
    svr.set_payload_max_length(state.config.max_body_bytes);
    install_http_defaults(svr);
    register_web_routes(svr, state);
    register_openai_routes(svr, state);
    register_sdapi_routes(svr, state);
    register_sdcpp_routes(svr, state);
}

}  // namespace server
