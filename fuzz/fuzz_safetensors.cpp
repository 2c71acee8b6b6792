// read_safetensors over the input as a file, then every small tensor loaded and read. An
// input that starts with '{' is also opened as a "*.safetensors.index.json" shard index,
// beside a fixed valid shard "shard.safetensors" (see corpus/safetensors/index.json).
// The mutator mostly mutates the JSON header or the data alone and rewrites the 8-byte
// header length to match, so that a changed header is still read as a whole.
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "io/tensor_file.h"

namespace {

// {"a": F32 [2], "b": F16 [1, 2]}: 8 + header + 12 data bytes.
void write_shard() {
    const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                               R"("b":{"dtype":"F16","shape":[1,2],"data_offsets":[8,12]}})";
    std::string file(8, '\0');
    const uint64_t n = header.size();
    std::memcpy(file.data(), &n, 8);
    file += header + std::string(12, '\x3c');
    sd::fuzz::write_file("shard.safetensors", reinterpret_cast<const uint8_t*>(file.data()),
                         file.size());
}

}  // namespace

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
    uint64_t header = 0;
    if (size >= 8) std::memcpy(&header, data, 8);
    if (size < 8 || header > size - 8 || seed % 4 == 0 || max_size < 8)
        return LLVMFuzzerMutate(data, size, max_size);
    // Mutate one part (the header 3 times in 4) within the room left, then reassemble.
    const bool in_header = seed % 16 >= 4;
    const size_t begin = in_header ? 8 : 8 + header;
    const size_t part = in_header ? header : size - 8 - header;
    const size_t others = size - part;
    if (part == 0 || others >= max_size) return LLVMFuzzerMutate(data, size, max_size);
    std::vector<uint8_t> buf(data + begin, data + begin + part);
    buf.resize(max_size - others);
    buf.resize(LLVMFuzzerMutate(buf.data(), part, buf.size()));
    std::vector<uint8_t> out(data, data + 8);
    if (in_header) {
        const uint64_t n = buf.size();
        std::memcpy(out.data(), &n, 8);
        out.insert(out.end(), buf.begin(), buf.end());
        out.insert(out.end(), data + 8 + header, data + size);
    } else {
        out.insert(out.end(), data + 8, data + 8 + header);
        out.insert(out.end(), buf.begin(), buf.end());
    }
    std::memcpy(data, out.data(), out.size());
    return out.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const bool ready = (write_shard(), true);
    (void)ready;
    const std::string path = sd::fuzz::write_file("input.safetensors", data, size);
    sd::fuzz::run_one([&] { sd::fuzz::sink = sd::fuzz::touch(sd::read_safetensors(path)); });
    if (size > 0 && data[0] == '{') {
        // The index may name the input itself; it must not be left over from an earlier run.
        ::unlink(path.c_str());
        const std::string index = sd::fuzz::write_file("model.safetensors.index.json", data, size);
        sd::fuzz::run_one([&] { sd::fuzz::sink = sd::fuzz::touch(sd::open_tensor_file(index)); });
    }
    return 0;
}
