// The HTTP layer's defences. cpp-httplib 0.11 runs each connection on a task-queue thread and
// guards its reads with per-read timeouts only: a client that sends a header a byte at a
// time holds a thread for ever, ~85 such connections left /health unanswered, and a POST
// without Content-Length (`curl -X POST`) was read until the connection closed. GuardedServer
// replaces the per-connection loop (process_and_close_socket, which the library lets a
// subclass replace) and reads through its own stream:
// - a request's head (request line and headers) must arrive within read_timeout in all, and
//   each body read waits at most read_timeout;
// - a request with neither Content-Length nor a chunked body has an empty body;
// - one client address holds at most max_per_client connections; more are answered 503 at
//   once;
// - connection threads are made as needed (up to max_connections), so held connections never
//   leave /health or a cancel waiting for a thread;
// - after begin_stop() every wait ends within 50 ms.
// A route asks client_disconnected() whether the client of the request it runs has gone.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>

#include <httplib.h>

namespace server {

struct HttpLimits {
    int read_timeout_ms = 5000;
    int write_timeout_ms = 10000;
    int keep_alive_ms = 2000;
    int max_requests_per_connection = 100;
    int max_per_client = 64;
    int max_connections = 512;  // connection threads at most; more connections wait
};

class GuardedServer : public httplib::Server {
  public:
    explicit GuardedServer(HttpLimits limits);
    // Connections end at their next wait; call before stop().
    void begin_stop() { stopping_ = true; }
    // Serves one accepted connection on the calling thread, as the listener's threads do,
    // and closes it (the fuzz target drives the connection loop through it).
    void serve_connection(socket_t sock) { process_and_close_socket(sock); }

  private:
    bool process_and_close_socket(socket_t sock) override;
    bool admit(const std::string& address);
    void leave(const std::string& address);

    const HttpLimits limits_;
    std::atomic<bool> stopping_{false};
    std::mutex clients_mutex_;
    std::map<std::string, int> clients_;  // open connections per address
};

// Whether the client of the request this thread is answering has closed its connection
// (false outside a GuardedServer connection).
bool client_disconnected();

}  // namespace server
