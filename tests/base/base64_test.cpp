#include "base/base64.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace sd {
namespace {

std::vector<uint8_t> bytes(const std::string& s) {
    return {s.begin(), s.end()};
}

TEST(Base64, EncodesRfc4648Vectors) {
    EXPECT_EQ(sd::base64_encode(bytes("")), "");
    EXPECT_EQ(sd::base64_encode(bytes("f")), "Zg==");
    EXPECT_EQ(sd::base64_encode(bytes("fo")), "Zm8=");
    EXPECT_EQ(sd::base64_encode(bytes("foo")), "Zm9v");
    EXPECT_EQ(sd::base64_encode(bytes("foob")), "Zm9vYg==");
    EXPECT_EQ(sd::base64_encode(bytes("fooba")), "Zm9vYmE=");
    EXPECT_EQ(sd::base64_encode(bytes("foobar")), "Zm9vYmFy");
}

TEST(Base64, DecodesWithAndWithoutPaddingAndLineBreaks) {
    EXPECT_EQ(sd::base64_decode("Zm9vYmE="), bytes("fooba"));
    EXPECT_EQ(sd::base64_decode("Zm9vYmE"), bytes("fooba"));
    EXPECT_EQ(sd::base64_decode("Zm9v\r\nYmFy\n"), bytes("foobar"));
    EXPECT_EQ(sd::base64_decode(""), bytes(""));
}

TEST(Base64, RoundTripsRandomBytes) {
    std::mt19937 gen(7);
    for (size_t n = 0; n < 70; ++n) {
        std::vector<uint8_t> data(n);
        for (uint8_t& b : data) b = static_cast<uint8_t>(gen());
        EXPECT_EQ(sd::base64_decode(base64_encode(data)), data) << n;
    }
}

TEST(Base64, RejectsMalformedText) {
    EXPECT_FALSE(sd::base64_decode("Zm9v!mFy"));   // not in the alphabet
    EXPECT_FALSE(sd::base64_decode("Zm9vY"));      // 6 dangling bits
    EXPECT_FALSE(sd::base64_decode("Zm=9v"));      // data after padding
    EXPECT_FALSE(sd::base64_decode("Zm9vYg==="));  // too much padding
    EXPECT_FALSE(
        sd::base64_decode("Zg=="
                          "Zg=="));           // padding in the middle
    EXPECT_FALSE(sd::base64_decode("-_-_"));  // the URL alphabet is not accepted
}

}  // namespace
}  // namespace sd
