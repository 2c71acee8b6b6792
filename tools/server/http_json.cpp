#include "http_json.h"

#include <exception>
#include <new>

#include "json_fields.h"
#include "log_output.h"
#include "request_error.h"

namespace server {
namespace {

using nlohmann::json;

const char* default_code(int status) {
    switch (status) {
        case 400:
            return "bad_request";
        case 404:
            return "not_found";
        case 405:
            return "method_not_allowed";
        case 408:
            return "request_timeout";
        case 413:
            return "payload_too_large";
        case 414:
            return "uri_too_long";
        case 415:
            return "unsupported_media_type";
        case 416:
            return "range_not_satisfiable";
        case 429:
            return "queue_full";
        case 503:
            return "unavailable";
        default:
            return status < 500 ? "bad_request" : "server_error";
    }
}

std::string default_message(const httplib::Request& req, int status) {
    switch (status) {
        case 404:
            return "no route " + req.method + " " + req.path.substr(0, 200);
        case 413:
            return "the request body is larger than the server accepts (--max-body-size)";
        case 414:
            return "the request URI is too long";
        case 400:
            return "the request could not be read (malformed HTTP, headers or multipart body)";
        default:
            return "HTTP status " + std::to_string(status);
    }
}

}  // namespace

std::string dump_json(const json& value) {
    return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

void send_json(httplib::Response& res, int status, const json& body) {
    res.status = status;
    res.set_content(dump_json(body), "application/json");
}

json error_body(int status, const std::string& code, const std::string& message,
                const std::string& field) {
    return {{"error",
             {{"message", message},
              {"type", status < 500 ? "invalid_request_error" : "server_error"},
              {"param", field.empty() ? json(nullptr) : json(field)},
              {"code", code}}}};
}

void send_error(httplib::Response& res, int status, const std::string& code,
                const std::string& message, const std::string& field) {
    send_json(res, status, error_body(status, code, message, field));
}

json parse_body(const httplib::Request& req) {
    if (req.is_multipart_form_data())
        throw bad_request("invalid_json", "expected a JSON body, got multipart/form-data");
    return parse_json_object(req.body, "");
}

httplib::Server::Handler guarded(RouteHandler handler) {
    return [handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
        try {
            handler(req, res);
        } catch (const RequestError& e) {
            send_error(res, e.status(), e.code(), e.what(), e.field());
        } catch (const json::exception& e) {
            // The JSON library's own text names no field; the log keeps it for the developer.
            cli::log_error("%s %s: %s", req.method.c_str(), req.path.c_str(), e.what());
            send_error(res, 400, "invalid_json",
                       "invalid request: a field holds a value of the wrong type");
        } catch (const std::bad_alloc&) {
            send_error(res, 503, "out_of_memory", "the server ran out of memory for this request");
        } catch (const std::exception& e) {
            cli::log_error("%s %s: %s", req.method.c_str(), req.path.c_str(), e.what());
            send_error(res, 500, "server_error", e.what());
        } catch (...) {
            send_error(res, 500, "server_error", "unexpected error");
        }
    };
}

void install_http_defaults(httplib::Server& svr) {
    svr.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
        res.set_header("Access-Control-Allow-Origin", "*");
        res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        res.set_header("Access-Control-Allow-Headers", "*");
        if (req.method == "OPTIONS") {
            res.status = 204;
            return httplib::Server::HandlerResponse::Handled;
        }
        return httplib::Server::HandlerResponse::Unhandled;
    });
    svr.set_error_handler(httplib::Server::HandlerWithResponse(
        [](const httplib::Request& req, httplib::Response& res) {
            if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
            send_error(res, res.status, default_code(res.status), default_message(req, res.status));
            return httplib::Server::HandlerResponse::Handled;
        }));
    svr.set_exception_handler(
        [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
            std::string what = "unexpected error";
            try {
                if (ep) std::rethrow_exception(ep);
            } catch (const std::exception& e) {
                what = e.what();
            } catch (...) {
            }
            cli::log_error("%s %s: %s", req.method.c_str(), req.path.c_str(), what.c_str());
            send_error(res, 500, "server_error", what);
        });
    svr.set_logger([](const httplib::Request& req, const httplib::Response& res) {
        cli::log_debug("%s %s -> %d", req.method.c_str(), req.path.c_str(), res.status);
    });
}

}  // namespace server
