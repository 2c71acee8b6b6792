// The restricted unpickler alone, over the input in memory, then a bounded walk of the
// object graph it returns (shared and cyclic references are allowed) and of its storage
// and tensor tables.
#include <span>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "io/pickle_reader.h"

namespace {

using sd::pickle::Kind;
using sd::pickle::Object;

uint64_t walk(const sd::pickle::Pickle& p) {
    uint64_t sum = 0;
    size_t budget = 1u << 16;
    std::vector<std::pair<const Object*, int>> todo{{&p.root(), 0}};
    while (!todo.empty() && budget-- > 0) {
        auto [o, depth] = todo.back();
        todo.pop_back();
        sum += static_cast<uint64_t>(o->kind) + o->text.size() + o->items.size();
        if (o->kind == Kind::Storage) sum += p.storages().at(o->index).key.size();
        if (o->kind == Kind::Tensor) sum += p.tensors().at(o->index).size.size();
        if (depth < 64)
            for (const Object* i : o->items) todo.push_back({i, depth + 1});
    }
    for (const auto& s : p.storages())
        sum += s.key.size() + s.location.size() + static_cast<uint64_t>(s.numel) +
               sd::pickle::elem_size(s.elem);
    for (const auto& t : p.tensors()) {
        sum += p.storages().at(t.storage).key.size() +
               std::string(sd::pickle::elem_name(t.elem)).size();
        for (int64_t v : t.size) sum += static_cast<uint64_t>(v);
        for (int64_t v : t.stride) sum += static_cast<uint64_t>(v);
    }
    return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    sd::fuzz::run_one([&] {
        sd::pickle::Pickle p = sd::pickle::read_pickle({data, size}, "fuzz", "archive/data.pkl");
        sd::fuzz::sink = walk(p);
    });
    return 0;
}
