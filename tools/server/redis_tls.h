// TLS for rediss:// (--queue-tls-ca/-cert/-key): one verified OpenSSL client context per
// endpoint, shared by its connections. The server's certificate must chain to the CA file
// (the system's store when none is given) and name the host of the URL.
#pragma once

#include <string>

struct ssl_ctx_st;

namespace server {

struct RedisTlsFiles {
    std::string ca;    // PEM bundle of trusted CAs; empty: the system's store
    std::string cert;  // client certificate (PEM), for servers that ask for one
    std::string key;   // its private key (PEM)
};

class RedisTlsContext {
  public:
    // Throws std::runtime_error naming the option and file that cannot be used.
    explicit RedisTlsContext(const RedisTlsFiles& files);
    ~RedisTlsContext();
    RedisTlsContext(const RedisTlsContext&) = delete;
    RedisTlsContext& operator=(const RedisTlsContext&) = delete;

    ssl_ctx_st* get() const { return ctx_; }

  private:
    ssl_ctx_st* ctx_ = nullptr;
};

// The newest OpenSSL error of this thread as text ("" when none), and the queue emptied.
std::string take_openssl_error();

}  // namespace server
