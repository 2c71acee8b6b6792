#include "conditioners/prompt_weighting.h"

#include <cctype>
#include <cstdlib>

#include "base/cancel.h"

namespace sd {
namespace {

constexpr float kRoundMultiplier = 1.1f;
constexpr float kSquareMultiplier = 1.0f / 1.1f;

struct Parser {
    std::vector<WeightedText> out;
    std::vector<size_t> round, square;

    // Unbalanced brackets make this quadratic in a hostile prompt: it stays cancellable.
    void multiply_from(size_t start, float m) {
        for (size_t i = start; i < out.size(); ++i) {
            if (i % 65536 == 0) cancellation_point();
            out[i].weight *= m;
        }
    }

    // Plain text, split at every BREAK that stands as a word of its own; the spaces
    // around a BREAK go with it.
    void add_text(const std::string& text) {
        size_t start = 0;
        for (size_t pos = text.find("BREAK"); pos != std::string::npos;
             pos = text.find("BREAK", pos + 1)) {
            bool word_start =
                pos == 0 ||
                !(std::isalnum(static_cast<unsigned char>(text[pos - 1])) || text[pos - 1] == '_');
            size_t end = pos + 5;
            bool word_end =
                end >= text.size() ||
                !(std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_');
            if (!word_start || !word_end) continue;
            size_t left = pos, right = end;
            while (left > start && std::isspace(static_cast<unsigned char>(text[left - 1]))) --left;
            while (right < text.size() && std::isspace(static_cast<unsigned char>(text[right])))
                ++right;
            out.push_back({text.substr(start, left - start), 1.0f, false});
            out.push_back({"", -1.0f, true});
            start = right;
            pos = right - 1;
        }
        out.push_back({text.substr(start), 1.0f, false});
    }
};

bool is_special(char c) {
    return c == '\\' || c == '(' || c == ')' || c == '[' || c == ']' || c == ':';
}

// ":<spaces><number><spaces>)" at s[i]; on success returns the number and the index after ')'.
bool match_weight(const std::string& s, size_t i, float& weight, size_t& next) {
    if (s[i] != ':') return false;
    size_t j = i + 1;
    while (j < s.size() && std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    size_t num_start = j;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    size_t digits = j;
    while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '.')) ++j;
    if (j == digits) return false;
    std::string number = s.substr(num_start, j - num_start);
    while (j < s.size() && std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    if (j >= s.size() || s[j] != ')') return false;
    char* end = nullptr;
    weight = std::strtof(number.c_str(), &end);
    if (end == number.c_str()) return false;  // e.g. "." alone, as Python's float() would fail
    next = j + 1;
    return true;
}

}  // namespace

std::vector<WeightedText> parse_prompt_attention(const std::string& prompt) {
    Parser p;
    const std::string& s = prompt;
    size_t i = 0;
    while (i < s.size()) {
        cancellation_point();  // a prompt of megabytes is a million pieces (base/cancel.h)
        char c = s[i];
        float weight = 0;
        size_t next = 0;
        if (c == '\\' && i + 1 < s.size() &&
            (s[i + 1] == '(' || s[i + 1] == ')' || s[i + 1] == '[' || s[i + 1] == ']' ||
             s[i + 1] == '\\')) {
            p.out.push_back({std::string(1, s[i + 1]), 1.0f, false});
            i += 2;
        } else if (c == '\\') {
            i += 1;  // a backslash before anything else escapes nothing and is dropped, as A1111
                     // does
        } else if (c == '(') {
            p.round.push_back(p.out.size());
            i += 1;
        } else if (c == '[') {
            p.square.push_back(p.out.size());
            i += 1;
        } else if (c == ':' && match_weight(s, i, weight, next)) {
            if (!p.round.empty()) {
                p.multiply_from(p.round.back(), weight);
                p.round.pop_back();
            } else {
                p.add_text(s.substr(i, next - i));  // a weight outside brackets is plain text
            }
            i = next;
        } else if (c == ')' && !p.round.empty()) {
            p.multiply_from(p.round.back(), kRoundMultiplier);
            p.round.pop_back();
            i += 1;
        } else if (c == ']' && !p.square.empty()) {
            p.multiply_from(p.square.back(), kSquareMultiplier);
            p.square.pop_back();
            i += 1;
        } else if (c == ')' || c == ']' || c == ':') {
            p.add_text(std::string(1, c));
            i += 1;
        } else {
            size_t j = i;
            while (j < s.size() && !is_special(s[j])) ++j;
            p.add_text(s.substr(i, j - i));
            i = j;
        }
    }
    for (size_t pos : p.round) p.multiply_from(pos, kRoundMultiplier);
    for (size_t pos : p.square) p.multiply_from(pos, kSquareMultiplier);
    if (p.out.empty()) p.out.push_back({"", 1.0f, false});
    // Merge neighbours of equal weight (BREAK markers have weight -1 and stay apart).
    std::vector<WeightedText> merged;
    for (WeightedText& t : p.out) {
        if (!merged.empty() && merged.back().weight == t.weight && !t.is_break &&
            !merged.back().is_break) {
            merged.back().text += t.text;
        } else {
            merged.push_back(std::move(t));
        }
    }
    return merged;
}

}  // namespace sd
