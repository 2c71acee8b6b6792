#include "base/cancel.h"

namespace sd {
namespace {

thread_local const CancelToken* t_current = nullptr;

}  // namespace

const CancelToken* current_cancel_token() {
    return t_current;
}

CancelScope::CancelScope(const CancelToken* token) : previous_(t_current) {
    if (token) t_current = token;
}

CancelScope::~CancelScope() {
    t_current = previous_;
}

}  // namespace sd
