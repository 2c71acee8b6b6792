// A request the server refuses: the HTTP status, a short machine-readable code, the request
// field at fault (empty when the request as a whole is wrong) and a message naming it.
// Thrown by the request parsers; http_json.h turns it into a JSON error response.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace server {

class RequestError : public std::runtime_error {
  public:
    RequestError(int status, std::string code, std::string field, const std::string& message)
        : std::runtime_error(message),
          status_(status),
          code_(std::move(code)),
          field_(std::move(field)) {}

    int status() const { return status_; }
    const std::string& code() const { return code_; }
    const std::string& field() const { return field_; }

  private:
    int status_;
    std::string code_;
    std::string field_;
};

// 400 for a malformed, missing or out-of-range field: "FIELD: PROBLEM".
inline RequestError bad_field(const std::string& field, const std::string& problem) {
    return RequestError(400, "invalid_field", field, field + ": " + problem);
}

// 400 for a request that is wrong as a whole (no body, not JSON, not multipart).
inline RequestError bad_request(const std::string& code, const std::string& message) {
    return RequestError(400, code, "", message);
}

}  // namespace server
