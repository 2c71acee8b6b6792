// sd-server binds its port before it loads the model: a taken port is said at once, with the
// reason, not after the load (the model named here does not even exist).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <string>

namespace {

// The output and exit status of `command`.
std::pair<std::string, int> run(const std::string& command) {
    std::string out;
    FILE* p = ::popen((command + " 2>&1").c_str(), "r");
    if (!p) return {"popen failed", -1};
    std::array<char, 4096> buf{};
    while (size_t n = std::fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
    return {out, ::pclose(p)};
}

TEST(ServerPort, ATakenPortIsSaidBeforeTheModelLoads) {
    // A port of our own, taken.
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::listen(fd, 1), 0);
    socklen_t len = sizeof addr;
    ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    const int port = ntohs(addr.sin_port);

    const auto [out, status] =
        run(std::string(SD_SERVER_PATH) + " -m /no/such/model.safetensors --listen-port " +
            std::to_string(port));
    ::close(fd);
    EXPECT_NE(status, 0) << out;
    EXPECT_NE(
        out.find("cannot listen on 127.0.0.1:" + std::to_string(port) + ": Address already in use"),
        std::string::npos)
        << out;
    EXPECT_EQ(out.find("/no/such/model"), std::string::npos) << "the model was read: " << out;
}

}  // namespace
