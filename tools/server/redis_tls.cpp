#include "redis_tls.h"

#include <csignal>
#include <mutex>
#include <stdexcept>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace server {

std::string take_openssl_error() {
    unsigned long code = 0, last = 0;
    while ((code = ERR_get_error()) != 0) last = code;
    if (last == 0) return "";
    char text[256];
    ERR_error_string_n(last, text, sizeof(text));
    return text;
}

RedisTlsContext::RedisTlsContext(const RedisTlsFiles& files) {
    // OpenSSL writes to the socket with write(): a peer that hung up would raise SIGPIPE,
    // which ends a process that kept the default action.
    static std::once_flag sigpipe_once;
    std::call_once(sigpipe_once, [] {
        struct sigaction old {};
        if (sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL)
            ::signal(SIGPIPE, SIG_IGN);
    });
    ERR_clear_error();
    ctx_ = SSL_CTX_new(TLS_client_method());
    if (!ctx_) throw std::runtime_error("TLS: cannot create a context: " + take_openssl_error());
    auto fail = [this](const std::string& what) {
        const std::string detail = take_openssl_error();
        SSL_CTX_free(ctx_);
        ctx_ = nullptr;
        throw std::runtime_error(what + (detail.empty() ? "" : " (" + detail + ")"));
    };
    SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    if (files.ca.empty()) {
        if (SSL_CTX_set_default_verify_paths(ctx_) != 1)
            fail("TLS: cannot read the system's CA store");
    } else if (SSL_CTX_load_verify_locations(ctx_, files.ca.c_str(), nullptr) != 1) {
        fail("--queue-tls-ca: cannot read CA certificates from '" + files.ca + "'");
    }
    if (files.cert.empty() != files.key.empty())
        fail(files.cert.empty() ? "--queue-tls-key needs --queue-tls-cert"
                                : "--queue-tls-cert needs --queue-tls-key");
    if (!files.cert.empty()) {
        if (SSL_CTX_use_certificate_chain_file(ctx_, files.cert.c_str()) != 1)
            fail("--queue-tls-cert: cannot read a certificate from '" + files.cert + "'");
        if (SSL_CTX_use_PrivateKey_file(ctx_, files.key.c_str(), SSL_FILETYPE_PEM) != 1) {
            if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH)
                fail("--queue-tls-key: '" + files.key + "' is not the key of '" + files.cert + "'");
            fail("--queue-tls-key: cannot read a private key from '" + files.key + "'");
        }
        if (SSL_CTX_check_private_key(ctx_) != 1)
            fail("--queue-tls-key: '" + files.key + "' is not the key of '" + files.cert + "'");
    }
    SSL_CTX_set_mode(ctx_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}

RedisTlsContext::~RedisTlsContext() {
    if (ctx_) SSL_CTX_free(ctx_);
}

}  // namespace server
