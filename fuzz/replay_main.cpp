// A main() for the fuzz targets in the ordinary build (GCC, no libFuzzer): replays every
// input file given (seeds, regressions) through LLVMFuzzerTestOneInput, then for --seconds
// runs random mutations of them (byte flips, interesting integers, inserted / erased /
// repeated runs, splices with another input; a target's own LLVMFuzzerCustomMutator on top).
// No coverage feedback, so it finds far less than libFuzzer (scripts/fuzz.sh); it keeps the
// targets building, the findings' inputs passing, and the parsers under some fuzzing in the
// test suite. A finding aborts (the targets' rule) after the input is written to
// $SD_FUZZ_TMP or /tmp as fuzz-replay-finding-PID.
//
//   fuzz_replay_gguf [--seconds S] [--seed N] [--max-len BYTES] FILE_OR_DIR...
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) __attribute__((weak));

namespace {

using Bytes = std::vector<uint8_t>;

std::mt19937_64 rng;
const Bytes* current = nullptr;  // the input running now, written out if it crashes

size_t pick(size_t n) {
    return n == 0 ? 0 : static_cast<size_t>(rng() % n);
}

// One random edit of `data` (at most max_size bytes), libFuzzer's simplest mutations.
void mutate_once(Bytes& data, size_t max_size, const std::vector<Bytes>& inputs) {
    static const uint64_t kInteresting[] = {0,          1,          0x7f,       0x80,
                                            0xff,       0x7fff,     0x8000,     0xffff,
                                            0x7fffffff, 0x80000000, 0xffffffff, ~uint64_t{0}};
    switch (pick(data.empty() ? 1 : 7)) {
        case 0: {  // insert random bytes
            const size_t n = 1 + pick(8);
            Bytes bytes(n);
            for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
            data.insert(data.begin() + static_cast<std::ptrdiff_t>(pick(data.size() + 1)),
                        bytes.begin(), bytes.end());
            break;
        }
        case 1:  // flip a bit
            data[pick(data.size())] ^= static_cast<uint8_t>(1u << pick(8));
            break;
        case 2:  // set a byte
            data[pick(data.size())] = static_cast<uint8_t>(rng());
            break;
        case 3: {  // write an interesting integer, 1 to 8 bytes little-endian
            const uint64_t v = kInteresting[pick(std::size(kInteresting))];
            const size_t width = size_t{1} << pick(4), at = pick(data.size());
            for (size_t i = 0; i < width && at + i < data.size(); ++i)
                data[at + i] = static_cast<uint8_t>(v >> (8 * i));
            break;
        }
        case 4: {  // erase a run
            const size_t at = pick(data.size());
            const size_t n = std::min(data.size() - at, 1 + pick(16));
            data.erase(data.begin() + static_cast<std::ptrdiff_t>(at),
                       data.begin() + static_cast<std::ptrdiff_t>(at + n));
            break;
        }
        case 5: {  // repeat a run
            const size_t at = pick(data.size());
            const size_t n = std::min(data.size() - at, 1 + pick(32));
            const Bytes run(data.begin() + static_cast<std::ptrdiff_t>(at),
                            data.begin() + static_cast<std::ptrdiff_t>(at + n));
            data.insert(data.begin() + static_cast<std::ptrdiff_t>(pick(data.size() + 1)),
                        run.begin(), run.end());
            break;
        }
        default: {  // splice: this input's head, another's tail
            const Bytes& other = inputs[pick(inputs.size())];
            data.resize(pick(data.size() + 1));
            const size_t from = pick(other.size() + 1);
            data.insert(data.end(), other.begin() + static_cast<std::ptrdiff_t>(from), other.end());
            break;
        }
    }
    if (data.size() > max_size) data.resize(max_size);
}

// $SD_FUZZ_TMP (else /tmp)/fuzz-replay-KIND-PID; "" when it cannot be written.
std::string save(const Bytes& input, const char* kind) {
    const char* env = std::getenv("SD_FUZZ_TMP");
    const std::string path = std::string(env && *env ? env : "/tmp") + "/fuzz-replay-" + kind +
                             "-" + std::to_string(::getpid());
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return "";
    std::fwrite(input.data(), 1, input.size(), f);
    std::fclose(f);
    return path;
}

// An input slower than this is saved (the slowest only) and named at the end: libFuzzer
// would call it a timeout at 10 s, and one slow input stalls the suite's time budget.
constexpr double kSlowSeconds = 1.0;
double slowest = 0;

void run(const Bytes& input) {
    current = &input;
    const auto t0 = std::chrono::steady_clock::now();
    LLVMFuzzerTestOneInput(input.data(), input.size());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > kSlowSeconds && s > slowest) {
        slowest = s;
        const std::string path = save(input, "slow");
        std::fprintf(stderr, "fuzz-replay: an input took %.1f s%s%s\n", s,
                     path.empty() ? "" : "; it is in ", path.c_str());
    }
    current = nullptr;
}

// On a crash: the input to a file, then the default action (the core / exit status).
void on_fatal(int sig) {
    if (current) {
        const std::string path = save(*current, "finding");
        if (!path.empty()) std::fprintf(stderr, "fuzz-replay: the input is in %s\n", path.c_str());
    }
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

void collect(const std::filesystem::path& p, std::vector<std::filesystem::path>& out) {
    if (std::filesystem::is_directory(p)) {
        for (const auto& e : std::filesystem::recursive_directory_iterator(p))
            if (e.is_regular_file() && e.path().extension() != ".py") out.push_back(e.path());
    } else {
        out.push_back(p);
    }
}

}  // namespace

int main(int argc, char** argv) {
    double seconds = 0;
    uint64_t seed = std::random_device{}();
    size_t max_len = 16384;
    std::vector<std::filesystem::path> files;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if ((a == "--seconds" || a == "--seed" || a == "--max-len") && i + 1 < argc) {
            const char* v = argv[++i];
            if (a == "--seconds") seconds = std::atof(v);
            if (a == "--seed") seed = std::strtoull(v, nullptr, 10);
            if (a == "--max-len") max_len = std::strtoull(v, nullptr, 10);
        } else if (!a.empty() && a[0] == '-') {
            std::fprintf(stderr,
                         "usage: %s [--seconds S] [--seed N] [--max-len BYTES] FILE_OR_DIR...\n",
                         argv[0]);
            return 2;
        } else if (!std::filesystem::exists(a)) {
            std::fprintf(stderr, "%s: no such file or folder: %s\n", argv[0], a.c_str());
            return 2;
        } else {
            collect(a, files);
        }
    }
    std::sort(files.begin(), files.end());
    std::vector<Bytes> inputs;
    for (const auto& f : files) {
        std::ifstream in(f, std::ios::binary);
        inputs.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    if (inputs.empty()) {
        std::fprintf(stderr, "%s: no inputs\n", argv[0]);
        return 2;
    }
    for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, on_fatal);
    const auto t0 = std::chrono::steady_clock::now();
    for (const Bytes& input : inputs) run(input);
    const double replay_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rng.seed(seed);
    size_t executions = 0;
    const auto t1 = std::chrono::steady_clock::now();
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count() < seconds) {
        Bytes data = inputs[pick(inputs.size())];
        if (data.size() > max_len) data.resize(max_len);
        for (size_t n = 1 + pick(4); n > 0; --n) mutate_once(data, max_len, inputs);
        if (LLVMFuzzerCustomMutator && pick(2) == 0) {
            const size_t size = data.size();
            data.resize(max_len);
            data.resize(
                LLVMFuzzerCustomMutator(data.data(), size, max_len, static_cast<unsigned>(rng())));
        }
        run(data);
        ++executions;
    }
    std::printf(
        "%s: %zu inputs replayed in %.1f s; %zu mutated inputs in %.0f s (seed %llu), no finding\n",
        argv[0], inputs.size(), replay_s, executions, seconds,
        static_cast<unsigned long long>(seed));
    return 0;
}

// libFuzzer's mutation entry point, which the custom mutators call.
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size) {
    Bytes bytes(data, data + size);
    mutate_once(bytes, max_size, {bytes});
    std::memcpy(data, bytes.data(), bytes.size());
    return bytes.size();
}
