// read_torch_checkpoint (zip directory, then the restricted unpickler, then the tensors
// built from its storages) over the input as a file, then every small tensor loaded and
// read. The mutator recomputes the CRC-32s of the zip's entries after most mutations, so
// that a changed pickle gets past the CRC check into the unpickler.
#include <cstring>
#include <string>

#include "fuzz_util.h"
#include "io/tensor_file.h"
#include "io/zip_reader.h"

namespace {

uint32_t le32(const uint8_t* p) {
    return p[0] | p[1] << 8 | p[2] << 16 | static_cast<uint32_t>(p[3]) << 24;
}
uint16_t le16(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] | p[1] << 8);
}

// For every central-directory record whose local header and bytes lie inside the input,
// sets its CRC-32 to that of the bytes.
void fix_crcs(uint8_t* data, size_t size) {
    for (size_t pos = 0; pos + 46 <= size; ++pos) {
        if (std::memcmp(data + pos, "PK\1\2", 4) != 0) continue;
        const uint64_t bytes = le32(data + pos + 24), local = le32(data + pos + 42);
        if (local + 30 > size || std::memcmp(data + local, "PK\3\4", 4) != 0) continue;
        const uint64_t begin = local + 30 + le16(data + local + 26) + le16(data + local + 28);
        if (begin > size || bytes > size - begin) continue;
        const uint32_t crc = sd::zip_crc32({data + begin, static_cast<size_t>(bytes)});
        for (int i = 0; i < 4; ++i) data[pos + 16 + i] = static_cast<uint8_t>(crc >> (8 * i));
    }
}

}  // namespace

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
    size = LLVMFuzzerMutate(data, size, max_size);
    if (seed % 8 != 0) fix_crcs(data, size);
    return size;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = sd::fuzz::write_file("input.ckpt", data, size);
    sd::fuzz::run_one([&] { sd::fuzz::sink = sd::fuzz::touch(sd::read_torch_checkpoint(path)); });
    return 0;
}
