// JSON over cpp-httplib: responses, the error shape every API answers with
// ({"error": {"message", "type", "param", "code"}}, as the OpenAI API spells it; "param"
// names the request field at fault), the guard that turns every exception of a route into
// such a response, and the server-wide handlers (unknown routes, oversized bodies, CORS).
#pragma once

#include <functional>
#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace server {

// Serialises with invalid UTF-8 replaced (request text is echoed back).
std::string dump_json(const nlohmann::json& value);

void send_json(httplib::Response& res, int status, const nlohmann::json& body);
nlohmann::json error_body(int status, const std::string& code, const std::string& message,
                          const std::string& field);
void send_error(httplib::Response& res, int status, const std::string& code,
                const std::string& message, const std::string& field = "");

// The request body as a JSON object; a RequestError otherwise.
nlohmann::json parse_body(const httplib::Request& req);

using RouteHandler = std::function<void(const httplib::Request&, httplib::Response&)>;
// Runs `handler`; RequestError, JSON errors and any other exception become JSON errors.
httplib::Server::Handler guarded(RouteHandler handler);

// Unknown routes, refused bodies and stray exceptions answered as JSON errors; CORS headers
// and OPTIONS preflight; a debug log line per request.
void install_http_defaults(httplib::Server& svr);

}  // namespace server
