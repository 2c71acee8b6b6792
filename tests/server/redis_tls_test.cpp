// rediss://: the queue's connections over TLS to Debian's redis-server started with
// --tls-port and a CA made by the test (openssl). Commands and a large value cross it; a job
// runs through the queue and a worker, and its cancel reaches the worker over TLS pub/sub; a
// certificate from another CA, a host the certificate does not name, a missing client
// certificate, a wrong password and unreadable files are each refused by name.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "redis_queue.h"
#include "redis_test_support.h"
#include "redis_tls.h"
#include "request_error.h"
#include "requests.h"
#include "worker_loop.h"

namespace server {
namespace {

namespace fs = std::filesystem;
using namespace server::test;

// A CA, another CA, a server certificate for IP 127.0.0.1 signed by the first, and a client
// certificate signed by it; EC P-256 keys.
struct TestPki {
    fs::path dir;
    bool made = false;

    explicit TestPki(fs::path where) : dir(std::move(where)) {
        fs::create_directories(dir);
        const std::string d = dir.string();
        const std::string key = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
        const std::string cmd =
            "cd '" + d + "' && printf 'subjectAltName=IP:127.0.0.1\\n' > server.ext && " +
            "openssl req -x509" + key + " -keyout ca.key -out ca.crt -days 2 -subj /CN=sd-ca && " +
            "openssl req -x509" + key + " -keyout other.key -out other.crt -days 2 " +
            "-subj /CN=sd-other-ca && " + "openssl req" + key +
            " -keyout server.key -out server.csr -subj /CN=sd-redis && " +
            "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial " +
            "-out server.crt -days 2 -extfile server.ext && " + "openssl req" + key +
            " -keyout client.key -out client.csr -subj /CN=sd-worker && " +
            "openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial " +
            "-out client.crt -days 2";
        made = std::system(("(" + cmd + ") > '" + d + "/openssl.log' 2>&1").c_str()) == 0;
    }
    ~TestPki() {
        std::error_code ignored;
        fs::remove_all(dir, ignored);
    }
    std::string file(const char* name) const { return (dir / name).string(); }
};

class RedisTlsTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        pki_ = std::make_unique<TestPki>(fs::temp_directory_path() /
                                         ("sd_redis_tls_" + std::to_string(::getpid())));
        ASSERT_TRUE(pki_->made) << "openssl could not make the test CA (see "
                                << pki_->file("openssl.log") << ")";
        password_port_ = free_port();
        password_pid_ = spawn_tls({"--requirepass", "s3cret", "--tls-auth-clients", "no"},
                                  password_port_, endpoint(password_port_, "s3cret"));
        ASSERT_GT(password_pid_, 0) << "cannot run redis-server with --tls-port";
        client_cert_port_ = free_port();
        client_cert_pid_ = spawn_tls({"--tls-auth-clients", "yes"}, client_cert_port_,
                                     endpoint(client_cert_port_, "", /*client_cert=*/true));
        ASSERT_GT(client_cert_pid_, 0) << "cannot run redis-server with --tls-auth-clients yes";
    }
    static void TearDownTestSuite() {
        stop_redis(password_pid_);
        stop_redis(client_cert_pid_);
        pki_.reset();
    }

    static pid_t spawn_tls(std::vector<std::string> extra, int port, const RedisEndpoint& probe) {
        const std::vector<std::string> tls = {"--port",
                                              "0",
                                              "--tls-port",
                                              std::to_string(port),
                                              "--tls-cert-file",
                                              pki_->file("server.crt"),
                                              "--tls-key-file",
                                              pki_->file("server.key"),
                                              "--tls-ca-cert-file",
                                              pki_->file("ca.crt")};
        extra.insert(extra.begin(), tls.begin(), tls.end());
        return spawn_redis_with(extra, probe);
    }
    // rediss://[:password@]127.0.0.1:port trusting `ca` (and presenting the client
    // certificate when asked).
    static RedisEndpoint endpoint(int port, const std::string& password, bool client_cert = false,
                                  const char* ca = "ca.crt") {
        RedisEndpoint e = loopback(port);
        e.tls = true;
        e.password = password;
        RedisTlsFiles files;
        files.ca = pki_->file(ca);
        if (client_cert) {
            files.cert = pki_->file("client.crt");
            files.key = pki_->file("client.key");
        }
        e.tls_context = std::make_shared<RedisTlsContext>(files);
        return e;
    }
    // What connecting to `e` and a PING throw ("" when PONG comes back). Under TLS 1.3 a
    // server refuses a client's certificate after the handshake, at the first command.
    static std::string connect_error(const RedisEndpoint& e) {
        try {
            RedisClient client(e, 2s);
            client.connect_now();
            return client.command({"PING"}).text() == "PONG" ? "" : "no PONG";
        } catch (const std::exception& ex) {
            return ex.what();
        }
    }
    JobSpec native_spec(int64_t seed) {
        const nlohmann::json body = {{"prompt", "a house"}, {"seed", seed}};
        JobSpec spec = parse_native_request(body, {defaults_, ServerLimits{}});
        spec.source = {"native", body};
        return spec;
    }

    static inline std::unique_ptr<TestPki> pki_;
    static inline int password_port_ = 0, client_cert_port_ = 0;
    static inline pid_t password_pid_ = -1, client_cert_pid_ = -1;
    cli::CliParams defaults_;
};

TEST_F(RedisTlsTest, CommandsAndALargeValueCrossTheConnection) {
    RedisClient client(endpoint(password_port_, "s3cret"));
    EXPECT_EQ(client.command({"PING"}).text(), "PONG");
    std::string value(size_t{3} << 20, '\0');  // several TLS records each way
    for (size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>((i * 131) >> 7);
    client.command({"SET", "big", value}).expect("SET");
    EXPECT_EQ(client.command({"GET", "big"}).str, value);
    std::vector<std::vector<std::string>> increments(100, {"INCR", "n"});
    EXPECT_EQ(client.pipeline(increments).back().integer, 100);
    client.command({"DEL", "big", "n"});
}

TEST_F(RedisTlsTest, AJobAndItsCancelGoThroughTheQueueOverTls) {
    const RedisEndpoint e = endpoint(password_port_, "s3cret");
    RedisClient(e).command({"FLUSHALL"});
    RedisQueue queue({e, "fake", 8, 60});
    queue.start();
    StandInRunner runner;
    WorkerSettings w;
    w.endpoint = e;
    w.model = "fake";
    w.visibility_ms = 2000;
    w.result_ttl_seconds = 60;
    w.name = "tls-worker";
    RedisWorker worker(w, runner);
    worker.start();

    const std::string id = queue.submit(native_spec(41), "openai", Retention::UntilCollected);
    const JobSnapshot done = queue.wait(id);  // the done message arrives over TLS pub/sub
    ASSERT_EQ(done.status, JobStatus::Completed) << done.error_message;
    ASSERT_EQ(done.images->size(), 1u);
    EXPECT_EQ((*done.images)[0].seed, 41);

    runner.hold = true;  // the next job waits in the runner until its cancel arrives
    const std::string held = queue.submit(native_spec(42), "sdcpp", Retention::Timed);
    ASSERT_TRUE(runner.wait_runs(2));
    JobSnapshot s;
    queue.cancel(held, &s);
    for (int i = 0; i < 200 && !is_finished(s.status); ++i) {
        std::this_thread::sleep_for(50ms);
        queue.find(held, &s);
    }
    EXPECT_EQ(s.status, JobStatus::Cancelled);
    worker.stop();
    queue.stop();
}

TEST_F(RedisTlsTest, ACertificateFromAnotherCaIsRefusedByName) {
    const std::string error = connect_error(endpoint(password_port_, "s3cret", false, "other.crt"));
    EXPECT_NE(error.find("certificate is not trusted"), std::string::npos) << error;
    EXPECT_NE(error.find("127.0.0.1:" + std::to_string(password_port_)), std::string::npos)
        << error;
}

TEST_F(RedisTlsTest, AHostTheCertificateDoesNotNameIsRefused) {
    RedisEndpoint e = endpoint(password_port_, "s3cret");
    e.host = "localhost";  // the certificate names IP 127.0.0.1 only
    const std::string error = connect_error(e);
    EXPECT_NE(error.find("certificate is not trusted"), std::string::npos) << error;
    EXPECT_NE(error.find("mismatch"), std::string::npos) << error;
}

TEST_F(RedisTlsTest, AServerThatAsksForAClientCertificateGetsIt) {
    EXPECT_EQ(connect_error(endpoint(client_cert_port_, "", /*client_cert=*/true)), "");
    const std::string error = connect_error(endpoint(client_cert_port_, ""));
    EXPECT_FALSE(error.empty()) << "connected without the client certificate it asks for";
}

TEST_F(RedisTlsTest, AWrongPasswordIsNamedAndNotRetriedAsAnOutage) {
    try {
        RedisQueue queue({endpoint(password_port_, "wrong"), "fake", 8, 60});
        FAIL() << "a wrong password was taken";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("refused AUTH"), std::string::npos) << e.what();
    }
}

TEST_F(RedisTlsTest, APlainConnectionToTheTlsPortFails) {
    RedisEndpoint plain = loopback(password_port_);
    plain.password = "s3cret";
    EXPECT_FALSE(connect_error(plain).empty());
}

TEST_F(RedisTlsTest, UnreadableOrMismatchedFilesAreNamed) {
    auto error = [](const RedisTlsFiles& files) {
        try {
            RedisTlsContext context(files);
            return std::string();
        } catch (const std::runtime_error& e) {
            return std::string(e.what());
        }
    };
    const std::string missing = error({"/nonexistent/ca.pem", "", ""});
    EXPECT_NE(missing.find("--queue-tls-ca"), std::string::npos) << missing;
    EXPECT_NE(missing.find("/nonexistent/ca.pem"), std::string::npos) << missing;
    const std::string not_a_key =
        error({pki_->file("ca.crt"), pki_->file("client.crt"), pki_->file("ca.crt")});
    EXPECT_NE(not_a_key.find("--queue-tls-key"), std::string::npos) << not_a_key;
    const std::string other_key =
        error({pki_->file("ca.crt"), pki_->file("client.crt"), pki_->file("server.key")});
    EXPECT_NE(other_key.find("is not the key of"), std::string::npos) << other_key;
    const std::string half = error({"", pki_->file("client.crt"), ""});
    EXPECT_NE(half.find("--queue-tls-cert needs --queue-tls-key"), std::string::npos) << half;
}

}  // namespace
}  // namespace server
