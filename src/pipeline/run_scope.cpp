#include "pipeline/run_scope.h"

#include "pipeline/components.h"

namespace sd {

RunOptions run_options(const MemoryPolicy& policy, size_t cache_bytes, const CancelToken* cancel) {
    RunOptions o;
    o.compute = policy.compute;
    o.threads = policy.threads;
    o.cache_bytes = cache_bytes;
    o.cancel = cancel;
    return o;
}

RunScope::RunScope(const RunOptions& o)
    : threads_(o.threads),
      compute_(o.compute.value_or(compute_type())),
      cache_(o.cache_bytes),
      cancel_(o.cancel) {}

RunScope::TrimAtEnd::~TrimAtEnd() {
    CachingAllocator::instance().trim();
}

}  // namespace sd
