#include "tokenizer/byte_bpe.h"

#include <queue>

#include "base/cancel.h"
#include "tokenizer/unicode_text.h"

namespace sd::bpe {

const std::array<char32_t, 256>& byte_code_points() {
    static const std::array<char32_t, 256> table = [] {
        std::array<char32_t, 256> t{};
        char32_t next = 256;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
            t[b] = printable ? static_cast<char32_t>(b) : next++;
        }
        return t;
    }();
    return table;
}

std::string byte_symbol(uint8_t b) {
    std::string s;
    unicode::append_utf8(s, byte_code_points()[b]);
    return s;
}

int byte_of_code_point(char32_t cp) {
    // Printable bytes map to themselves; the others to U+0100..U+0143.
    if (cp < 256) return byte_code_points()[cp] == cp ? static_cast<int>(cp) : -1;
    static const std::array<int, 68> shifted = [] {
        std::array<int, 68> t{};
        for (int b = 0; b < 256; ++b) {
            const char32_t c = byte_code_points()[b];
            if (c >= 256) t[c - 256] = b;
        }
        return t;
    }();
    return cp - 256 < shifted.size() ? shifted[cp - 256] : -1;
}

namespace {

uint64_t key_of(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
}

}  // namespace

void Merges::reserve(size_t n) {
    table_.reserve(n);
    pairs_.reserve(n);
}

bool Merges::add(int32_t left, int32_t right, int32_t merged) {
    const auto rank = static_cast<int32_t>(pairs_.size());
    if (!table_.emplace(key_of(left, right), Entry{rank, merged}).second) return false;
    pairs_.emplace_back(left, right);
    return true;
}

const Merges::Entry* Merges::find(int32_t left, int32_t right) const {
    const auto it = table_.find(key_of(left, right));
    return it == table_.end() ? nullptr : &it->second;
}

void Merges::apply(std::vector<int32_t>& ids) const {
    // Symbols form a linked list over their first positions; a heap holds the candidate
    // merges by (rank, position). A candidate whose symbols changed since is stale and
    // skipped. A merge may create a pair ranked below the one being applied (merge lists not
    // in training order): it waits until every occurrence of the current pair is merged, as
    // the reference's one pass per pair does.
    struct Candidate {
        int32_t rank, left, right, a, b;
        bool operator>(const Candidate& o) const {
            return rank != o.rank ? rank > o.rank : left > o.left;
        }
    };
    const auto n = static_cast<int32_t>(ids.size());
    if (n < 2) return;
    std::vector<int32_t> next(n), prev(n);
    for (int32_t i = 0; i < n; ++i) {
        next[i] = i + 1 < n ? i + 1 : -1;
        prev[i] = i - 1;
    }
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
    std::vector<Candidate> waiting;
    int32_t current = -1;
    auto offer = [&](int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        const Entry* e = find(ids[left], ids[right]);
        if (!e) return;
        const Candidate c{e->rank, left, right, ids[left], ids[right]};
        if (c.rank < current) {
            waiting.push_back(c);
        } else {
            heap.push(c);
        }
    };
    for (int32_t i = 0; i + 1 < n; ++i) offer(i, i + 1);
    for (uint32_t round = 1;; ++round) {
        if (round % 65536 == 0) cancellation_point();  // a megabyte-long "word"
        if (!waiting.empty() && (heap.empty() || heap.top().rank > current)) {
            for (const Candidate& c : waiting) heap.push(c);
            waiting.clear();
        }
        if (heap.empty()) break;
        const Candidate c = heap.top();
        heap.pop();
        if (ids[c.left] != c.a || next[c.left] != c.right || ids[c.right] != c.b) continue;
        current = c.rank;
        ids[c.left] = find(c.a, c.b)->merged;
        ids[c.right] = -1;
        next[c.left] = next[c.right];
        if (next[c.left] >= 0) prev[next[c.left]] = c.left;
        offer(prev[c.left], c.left);
        offer(c.left, next[c.left]);
    }
    size_t out = 0;
    for (int32_t i = 0; i >= 0; i = next[i]) ids[out++] = ids[i];
    ids.resize(out);
}

}  // namespace sd::bpe
