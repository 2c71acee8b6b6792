// Scratch memory of the kernels: per-thread buffers that the GEMM and convolution kernels
// reuse from call to call (packed panels, padded input bands, Winograd transforms), drawn
// from the caching allocator (so their bytes show in AllocatorStats::bytes_in_use and here)
// and given back when the work that needed them is over.
//
// Each thread has one buffer per ScratchSlot, grown to the largest request and kept, so that
// steady-state calls neither allocate nor fault pages in. A kernel holds a buffer through a
// ScratchLease for as long as it uses it (a task, an op call); one lease per slot and thread
// at a time. The pool's workers have buffers of their own like any thread; two runs (two
// contexts generating at once) share the workers' buffers safely because the pool runs one
// op at a time, while each generating thread keeps its own.
//
// Release. A run (ScratchRun, installed by pipeline/run_scope.h for each generation) gives
// back its generating thread's buffers when it ends, and the last live run to end gives back
// every thread's: an idle process holds no kernel scratch. A thread in the middle of a lease
// (an op outside any run) keeps its buffers until its lease ends, then frees them itself.
// Outside runs (tests, benchmarks, conversion) buffers stay until release_kernel_scratch().
//
// Sizes. The kernels bound what they take from their blocking constants (gemm.cpp,
// conv_direct.cpp, conv_winograd.cpp): the *_scratch_bound functions below, which the memory
// estimate (pipeline/memory_estimate.h) adds to each phase.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sd {

enum class ScratchSlot : int {
    GemmBlock = 0,   // a task's packed rows of the streamed operand (gemm.cpp)
    GemmDequant,     // block-quant rows dequantized before packing
    GemmConvert,     // f32 pieces converted to bf16 panels
    ConvBand,        // conv_direct's padded band; Winograd's V, M and input strip
    WinogradRows,    // a panel of the weight before its transform
    WinogradWeight,  // the transformed weight U (the calling thread's)
    WinogradShared,  // V shared by the threads when a layer is few chunks
    Count
};
const char* scratch_slot_name(ScratchSlot slot);

// The calling thread's buffer of `slot`, at least `floats` floats, 64-byte aligned, while the
// lease lives. zero_grown: a buffer that had to grow is zero-filled (as std::vector's were).
// floats == 0: no buffer (data() is null). Throws sd::Error when the thread already holds a
// lease of the slot.
class ScratchLease {
  public:
    ScratchLease(ScratchSlot slot, size_t floats, bool zero_grown = false);
    ~ScratchLease();
    ScratchLease(const ScratchLease&) = delete;
    ScratchLease& operator=(const ScratchLease&) = delete;
    float* data() const { return data_; }

  private:
    void* thread_ = nullptr;
    int slot_ = 0;
    float* data_ = nullptr;
};

struct KernelScratchStats {
    size_t bytes = 0;       // held by every thread's buffers now
    size_t peak_bytes = 0;  // the most held at once since the process started
    size_t buffers = 0;     // buffers allocated now
};
KernelScratchStats kernel_scratch_stats();

// Frees the calling thread's buffers (after its leases end, if it holds any).
void release_thread_scratch();
// Frees every thread's buffers; those of a thread inside a lease go when its lease ends.
void release_kernel_scratch();
// Runs live now (ScratchRun).
int live_runs();

// One run of ops (a generation, an upscale): counted while it lives; see Release above.
class ScratchRun {
  public:
    ScratchRun();
    ~ScratchRun();
    ScratchRun(const ScratchRun&) = delete;
    ScratchRun& operator=(const ScratchRun&) = delete;
};

// The bytes a buffer of `floats` floats really takes (the allocator's size class of it, at
// least a few KiB).
size_t scratch_buffer_bytes(size_t floats);

// What the kernels take, in bytes, as a bound from their blocking constants: per_thread on
// each thread an op runs on (the slots it grows), per_call once per op (the calling thread's
// slots and the op's transient buffers).
struct ScratchBound {
    double per_thread = 0;
    double per_call = 0;
    ScratchBound& max_with(const ScratchBound& o);
};
// A product of reduction length up to k, any weight dtype, f32 or bf16 compute (gemm.cpp).
ScratchBound gemm_scratch_bound(int64_t k);
// conv2d_direct with c input channels, a kh x kw kernel, padded (upsampled) input rows of wp
// values and oh output rows, run on `threads` threads (conv_direct.cpp).
ScratchBound conv_direct_scratch_bound(int64_t c, int64_t kh, int64_t kw, int64_t wp, int64_t oh,
                                       int threads);
// conv2d_winograd with c input and o output channels (conv_winograd.cpp).
ScratchBound winograd_scratch_bound(int64_t c, int64_t o);

}  // namespace sd
