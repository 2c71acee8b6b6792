// Cancels a token from another thread after a delay, for bounded-time cancellation tests:
// ended() says how long after the cancel the cancelled work ended.
#pragma once

#include <chrono>
#include <thread>

#include "base/cancel.h"
#include "base/clock.h"

namespace sd::test {

class CancelAfter {
  public:
    CancelAfter(CancelToken& token, int ms)
        : thread_([this, &token, ms] {
              std::this_thread::sleep_for(std::chrono::milliseconds(ms));
              cancelled_at_ = now_seconds();
              token.cancel();
          }) {}
    ~CancelAfter() {
        if (thread_.joinable()) thread_.join();
    }
    // Call once the work has thrown: seconds from the cancel to now.
    double ended() {
        const double now = now_seconds();
        thread_.join();
        return now - cancelled_at_;
    }

  private:
    double cancelled_at_ = 0;
    std::thread thread_;
};

}  // namespace sd::test
