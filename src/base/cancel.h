// Cancelling long work: a CancelToken that the work polls, and sd::Cancelled, which check()
// throws.
//
// An entry point that runs long work (generate_images, Upscaler::upscale, convert_model) takes
// its token explicitly and installs it as the calling thread's current token (CancelScope)
// for the duration. Below that, loops poll cancellation_point(), and the thread pool polls the
// current token before every parallel op and between its chunks, so a single large op (a VAE
// convolution at 1024x1024) stops within one chunk. Why the thread-local current token: ops
// are called eagerly from model code whose forward() signatures mirror the reference's;
// threading a token through every forward() and op would change all of them for one flag.
// It is per thread and per call, never process-wide: two contexts generating on two threads
// each see their own token, and a thread with no scope pays one thread-local read per op.
#pragma once

#include <atomic>

#include "base/error.h"

namespace sd {

class Cancelled : public Error {
  public:
    Cancelled() : Error("cancelled") {}
};

class CancelToken {
  public:
    void cancel() { flag_.store(true, std::memory_order_relaxed); }
    void reset() { flag_.store(false, std::memory_order_relaxed); }
    bool cancelled() const { return flag_.load(std::memory_order_relaxed); }
    // Throws sd::Cancelled once cancel() was called.
    void check() const {
        if (cancelled()) [[unlikely]]
            throw Cancelled();
    }

  private:
    std::atomic<bool> flag_{false};
};

// The calling thread's current token (nullptr: none).
const CancelToken* current_cancel_token();

// Makes `token` the thread's current token while it lives; nullptr keeps the current one.
class CancelScope {
  public:
    explicit CancelScope(const CancelToken* token);
    ~CancelScope();
    CancelScope(const CancelScope&) = delete;
    CancelScope& operator=(const CancelScope&) = delete;

  private:
    const CancelToken* previous_;
};

// Throws sd::Cancelled when the thread's current token was cancelled.
inline void cancellation_point() {
    if (const CancelToken* t = current_cancel_token()) t->check();
}

}  // namespace sd
