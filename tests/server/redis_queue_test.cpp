// The Redis queue end to end without a model: a redis-server of its own on a loopback
// port, the API side (RedisQueue) and workers (RedisWorker) over a stand-in runner. A job
// runs once and its result reaches the waiter; cancels of queued and generating jobs; a
// job left by a dead worker is taken over after the visibility timeout; a delivery of a job
// that has its outcome is acknowledged, not run; a job that killed its workers too often
// fails; the cap (429), a request or result larger than Redis takes (413, failed), Redis
// gone (503), Redis back but still loading its data (503, a waiter waits through it); values
// another process corrupted in a job's hash; a job whose outcome waits out an outage to be
// stored is not run again by another worker.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <thread>

#include "redis_jobs.h"
#include "redis_queue.h"
#include "redis_test_support.h"
#include "request_error.h"
#include "requests.h"
#include "worker_loop.h"

namespace server {
namespace {

using namespace std::chrono_literals;

using namespace server::test;

class RedisQueueTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        port_ = free_port();
        pid_ = spawn_redis(port_);
        ASSERT_GT(pid_, 0) << "cannot run redis-server on port " << port_
                           << " (scripts/install-deps.sh installs it)";
    }
    static void TearDownTestSuite() { stop_redis(pid_); }
    void SetUp() override { RedisClient(endpoint()).command({"FLUSHALL"}); }

    static RedisEndpoint endpoint() {
        RedisEndpoint e;
        e.host = "127.0.0.1";
        e.port = port_;
        return e;
    }
    RedisQueueSettings queue_settings(int max_pending = 16) {
        return {endpoint(), "fake", max_pending, 60};
    }
    WorkerSettings worker_settings(const std::string& name) {
        WorkerSettings w;
        w.endpoint = endpoint();
        w.model = "fake";
        w.visibility_ms = 2000;
        w.result_ttl_seconds = 60;
        w.name = name;
        return w;
    }
    JobSpec native_spec(int64_t seed) {
        const nlohmann::json body = {{"prompt", "a house"}, {"seed", seed}};
        JobSpec spec = parse_native_request(body, {defaults_, ServerLimits{}});
        spec.source = {"native", body};
        return spec;
    }
    // A job delivered to a worker called "ghost" that never acknowledges it, with `fields`
    // written into its hash (what the ghost left).
    std::string ghost_job(RedisQueue& queue, const std::vector<std::string>& fields) {
        const std::string id = queue.submit(native_spec(5), "sdcpp", Retention::Timed);
        RedisClient c(endpoint());
        const std::string stream = redis_jobs::stream_key("fake");
        c.command({"XGROUP", "CREATE", stream, redis_jobs::kGroup, "0", "MKSTREAM"});
        c.command({"XREADGROUP", "GROUP", redis_jobs::kGroup, "ghost", "COUNT", "1", "STREAMS",
                   stream, ">"})
            .expect("XREADGROUP");
        std::vector<std::string> hset = {"HSET", redis_jobs::job_key(id)};
        hset.insert(hset.end(), fields.begin(), fields.end());
        c.command(hset).expect("HSET");
        return id;
    }
    long long pending_deliveries() {
        const RedisReply r =
            RedisClient(endpoint())
                .command({"XPENDING", redis_jobs::stream_key("fake"), redis_jobs::kGroup});
        return r.elements.empty() ? 0 : r.elements[0].integer;
    }
    // A ghost's job left `fields`; a worker then takes it over. Its state once finished.
    JobSnapshot taken_over(RedisQueue& queue, const std::vector<std::string>& fields,
                           StandInRunner& runner) {
        const std::string id = ghost_job(queue, fields);
        RedisWorker worker(worker_settings("w1"), runner);
        worker.start();
        return poll_until_finished(queue, id);
    }
    JobSnapshot poll_until_finished(RedisQueue& queue, const std::string& id) {
        JobSnapshot s;
        for (int i = 0; i < 200; ++i) {
            if (queue.find(id, &s) == Lookup::Found && is_finished(s.status)) break;
            std::this_thread::sleep_for(50ms);
        }
        return s;
    }

    static inline int port_ = 0;
    static inline pid_t pid_ = -1;
    cli::CliParams defaults_;
};

TEST_F(RedisQueueTest, AJobRunsOnceAndItsResultReachesTheWaiter) {
    RedisQueue queue(queue_settings());
    queue.start();
    StandInRunner runner;
    RedisWorker worker(worker_settings("w1"), runner);
    worker.start();
    const std::string id = queue.submit(native_spec(77), "openai", Retention::UntilCollected);
    const JobSnapshot done = queue.wait(id);
    ASSERT_EQ(done.status, JobStatus::Completed) << done.error_message;
    ASSERT_EQ(done.images->size(), 1u);
    EXPECT_EQ((*done.images)[0].seed, 77);
    EXPECT_EQ(done.spec->request.seed, 77);  // this node's parsed request
    EXPECT_EQ(runner.runs, 1);
    EXPECT_EQ(queue.stats().completed, 1u);
    EXPECT_EQ(pending_deliveries(), 0);
    EXPECT_NE(queue.find(id, nullptr), Lookup::Found);  // collected
}

TEST_F(RedisQueueTest, CancelsAQueuedAndAGeneratingJob) {
    RedisQueue queue(queue_settings());
    StandInRunner runner;
    runner.hold = true;
    RedisWorker worker(worker_settings("w1"), runner);
    worker.start();
    const std::string running = queue.submit(native_spec(1), "sdcpp", Retention::Timed);
    ASSERT_TRUE(runner.wait_runs(1));
    const std::string queued = queue.submit(native_spec(2), "sdcpp", Retention::Timed);
    JobSnapshot s;
    EXPECT_EQ(queue.cancel(queued, &s), CancelResult::Cancelled);
    EXPECT_EQ(s.status, JobStatus::Cancelled);
    EXPECT_EQ(queue.cancel(running, &s), CancelResult::Cancelling);
    const auto t0 = std::chrono::steady_clock::now();
    s = poll_until_finished(queue, running);
    EXPECT_EQ(s.status, JobStatus::Cancelled);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
    EXPECT_EQ(queue.cancel(running, nullptr), CancelResult::AlreadyFinished);
    EXPECT_EQ(runner.runs, 1);  // the queued one never ran
    EXPECT_EQ(queue.stats().cancelled, 2u);
}

TEST_F(RedisQueueTest, AJobLeftByADeadWorkerIsTakenOver) {
    RedisQueue queue(queue_settings());
    StandInRunner runner;
    const JobSnapshot s =
        taken_over(queue, {"status", "generating", "worker", "ghost", "attempts", "1"}, runner);
    EXPECT_EQ(s.status, JobStatus::Completed) << s.error_message;
    EXPECT_EQ(runner.runs, 1);
    EXPECT_EQ(pending_deliveries(), 0);
}

TEST_F(RedisQueueTest, ADeliveryOfAFinishedJobIsAcknowledgedNotRun) {
    RedisQueue queue(queue_settings());
    const std::string id = ghost_job(queue, {"status", "completed", "result", "[]"});
    StandInRunner runner;
    RedisWorker worker(worker_settings("w1"), runner);
    worker.start();
    for (int i = 0; i < 200 && pending_deliveries() > 0; ++i) std::this_thread::sleep_for(50ms);
    EXPECT_EQ(pending_deliveries(), 0);
    EXPECT_EQ(runner.runs, 0);
    JobSnapshot s;
    ASSERT_EQ(queue.find(id, &s), Lookup::Found);
    EXPECT_EQ(s.status, JobStatus::Completed);
    EXPECT_EQ(queue.stats().completed, 0u);  // nothing counted a second time
}

TEST_F(RedisQueueTest, AJobThatKilledItsWorkersTooOftenFails) {
    RedisQueue queue(queue_settings());
    StandInRunner runner;
    const JobSnapshot s =
        taken_over(queue, {"status", "generating", "worker", "ghost", "attempts", "3"}, runner);
    EXPECT_EQ(s.status, JobStatus::Failed);
    EXPECT_EQ(s.error_code, "worker_lost");
    EXPECT_EQ(runner.runs, 0);
}

// Values another process wrote into a job's hash (a foreign or corrupt writer): a payload
// the worker cannot read fails the job with the reason; an unreadable result is the
// server's 500 naming the job, not the client's 400; an unreadable preview is ignored.
TEST_F(RedisQueueTest, CorruptJobValuesAreNamedNotBlamedOnTheClient) {
    RedisQueue queue(queue_settings());
    StandInRunner runner;
    const JobSnapshot s = taken_over(
        queue, {"status", "generating", "worker", "ghost", "attempts", "1", "payload", "[1,2"},
        runner);
    EXPECT_EQ(s.status, JobStatus::Failed);
    EXPECT_NE(s.error_message.find("payload"), std::string::npos) << s.error_message;
    EXPECT_EQ(runner.runs, 0);

    RedisClient c(endpoint());
    const std::string id = queue.submit(native_spec(5), "sdcpp", Retention::Timed);
    c.command(
         {"HSET", redis_jobs::job_key(id), "status", "generating", "preview", R"({"step":"x"})"})
        .expect("HSET");
    JobSnapshot g;
    ASSERT_EQ(queue.find(id, &g), Lookup::Found);
    EXPECT_EQ(g.status, JobStatus::Generating);
    EXPECT_FALSE(g.preview);
    c.command(
         {"HSET", redis_jobs::job_key(id), "status", "completed", "result", R"([{"width":"64"}])"})
        .expect("HSET");
    try {
        queue.find(id, &g);
        ADD_FAILURE() << "read a corrupt result";
    } catch (const RequestError& e) {
        EXPECT_EQ(e.status(), 500);
        EXPECT_NE(std::string(e.what()).find(id), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("\"width\""), std::string::npos) << e.what();
    }
}

TEST_F(RedisQueueTest, AFullQueueAnswers429) {
    RedisQueue queue(queue_settings(2));
    queue.submit(native_spec(1), "sdcpp", Retention::Timed);
    queue.submit(native_spec(2), "sdcpp", Retention::Timed);
    try {
        queue.submit(native_spec(3), "sdcpp", Retention::Timed);
        FAIL() << "accepted a third job";
    } catch (const RequestError& e) {
        EXPECT_EQ(e.status(), 429);
        EXPECT_EQ(e.code(), "queue_full");
    }
    EXPECT_EQ(queue.stats().rejected, 1u);
}

// Redis takes a value up to its proto-max-bulk-len: a larger request is refused with 413 at
// once and a larger result fails its job with the reason; neither is cut short.
TEST_F(RedisQueueTest, ARequestOrResultLargerThanRedisTakesIsRefusedNotTruncated) {
    const int port = free_port();
    const pid_t pid = spawn_redis(port, {"--proto-max-bulk-len", "1mb"});
    ASSERT_GT(pid, 0);
    {
        RedisQueue queue({loopback(port), "fake", 4, 60});
        JobSpec big = native_spec(1);
        big.source.body["prompt"] = std::string(size_t{1100} << 10, 'a');
        try {
            queue.submit(std::move(big), "sdcpp", Retention::Timed);
            ADD_FAILURE() << "a 1.1 MiB request went to a queue of 1 MiB values";
        } catch (const RequestError& e) {
            EXPECT_EQ(e.status(), 413);
            EXPECT_EQ(e.code(), "payload_too_large");
            EXPECT_NE(std::string(e.what()).find("proto-max-bulk-len"), std::string::npos)
                << e.what();
        }
        EXPECT_EQ(RedisClient(loopback(port)).command({"DBSIZE"}).integer, 1);  // sdq:models

        StandInRunner runner;
        runner.image_b64 = std::string(size_t{1100} << 10, 'A');
        WorkerSettings w = worker_settings("w1");
        w.endpoint = loopback(port);
        RedisWorker worker(w, runner);
        worker.start();
        const std::string id = queue.submit(native_spec(2), "sdcpp", Retention::Timed);
        const JobSnapshot s = poll_until_finished(queue, id);
        EXPECT_EQ(s.status, JobStatus::Failed);
        EXPECT_NE(s.error_message.find("larger than the job queue takes"), std::string::npos)
            << s.error_message;
        worker.stop();
    }
    stop_redis(pid);
}

TEST_F(RedisQueueTest, UnreachableRedisIsAClearErrorThen503) {
    RedisEndpoint other = endpoint();
    other.port = free_port();
    try {
        RedisQueue queue({other, "fake", 4, 60});
        FAIL() << "no error";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("cannot connect"), std::string::npos) << e.what();
    }
    const pid_t pid = spawn_redis(other.port);
    ASSERT_GT(pid, 0);
    RedisQueue queue({other, "fake", 4, 60});
    queue.submit(native_spec(1), "sdcpp", Retention::Timed);
    stop_redis(pid);
    for (const auto& call : std::vector<std::function<void()>>{
             [&] { queue.submit(native_spec(2), "sdcpp", Retention::Timed); },
             [&] { queue.stats(); }, [&] { queue.find("job_x", nullptr); }}) {
        try {
            call();
            ADD_FAILURE() << "answered without Redis";
        } catch (const RequestError& e) {
            EXPECT_EQ(e.status(), 503);
            EXPECT_EQ(e.code(), "queue_unavailable");
        }
    }
}

// After a restart Redis answers LOADING until its data is read back (seconds for a large
// data set): an outage like any other, not a server error.
TEST_F(RedisQueueTest, ARedisStillLoadingItsDataIsAnOutageNotAnError) {
    RedisWithFiles redis({"--dbfilename", "dump.rdb"});
    ASSERT_GT(redis.pid, 0);
    const RedisEndpoint at = redis.endpoint();
    RedisQueue queue({at, "fake", 16, 60});
    queue.start();
    const std::string id = queue.submit(native_spec(31), "sdcpp", Retention::Timed);
    {
        // 3000 keys read back 1 ms apiece: three seconds of LOADING.
        RedisClient c(at);
        std::vector<std::string> mset = {"MSET"};
        for (int i = 0; i < 3000; ++i) {
            mset.push_back("filler:" + std::to_string(i));
            mset.push_back("x");
        }
        c.command(mset).expect("MSET");
        c.command({"SAVE"}).expect("SAVE");
    }
    redis.stop();
    redis.restart({"--key-load-delay", "1000", "--loading-process-events-interval-bytes", "1024"});
    ASSERT_GT(redis.pid, 0) << "redis-server refused --key-load-delay (Redis 7 has it)";
    auto waiter = std::async(std::launch::async, [&] { return queue.wait(id); });
    // The pool's first connections were cut by the restart; then Redis answers LOADING.
    bool saw_loading = false;
    for (int i = 0; i < 20 && !saw_loading; ++i) {
        try {
            queue.submit(native_spec(32), "sdcpp", Retention::Timed);
            ADD_FAILURE() << "a submit was taken while Redis was loading";
            break;
        } catch (const RequestError& e) {
            EXPECT_EQ(e.status(), 503) << e.what();
            EXPECT_EQ(e.code(), "queue_unavailable");
            saw_loading = std::string(e.what()).find("LOADING") != std::string::npos;
        }
        std::this_thread::sleep_for(100ms);
    }
    EXPECT_TRUE(saw_loading);
    StandInRunner runner;
    WorkerSettings settings = worker_settings("w1");
    settings.endpoint = at;
    RedisWorker worker(settings, runner);
    worker.start();  // waits out the loading, then runs the saved job
    ASSERT_EQ(waiter.wait_for(30s), std::future_status::ready);
    const JobSnapshot done = waiter.get();
    EXPECT_EQ(done.status, JobStatus::Completed) << done.error_message;
    EXPECT_EQ(runner.runs, 1);
    worker.stop();
    queue.stop();
}

// A worker has run its job and waits out an outage to store the outcome, longer than its
// heartbeat lives: once Redis is back, the other worker must not take the job over and run
// it a second time (the worker still names the job; takers wait a grace after an outage).
TEST_F(RedisQueueTest, AJobThatRanAndWaitsOutAnOutageToBeStoredIsNotRunAgain) {
    RedisWithFiles redis({"--appendonly", "yes", "--appendfsync", "always"});
    ASSERT_GT(redis.pid, 0);
    const RedisEndpoint at = redis.endpoint();
    RedisQueue queue({at, "fake", 16, 60});
    const std::string id = queue.submit(native_spec(41), "sdcpp", Retention::Timed);
    StandInRunner first, second;
    first.hold = true;
    WorkerSettings settings = worker_settings("w1");
    settings.endpoint = at;
    RedisWorker w1(settings, first);
    w1.start();
    ASSERT_TRUE(first.wait_runs(1));
    settings.name = "w2";
    RedisWorker w2(settings, second);
    w2.start();

    redis.stop();
    first.release();                  // the run ends; its outcome cannot be stored
    std::this_thread::sleep_for(6s);  // past the heartbeat (5 s) and the visibility (2 s)
    redis.restart();
    ASSERT_GT(redis.pid, 0);

    JobSnapshot s;
    for (int i = 0; i < 300 && !is_finished(s.status); ++i) {
        try {
            if (queue.find(id, &s) != Lookup::Found) s = {};
        } catch (const RequestError&) {
            // the queue's connections were cut by the restart
        }
        std::this_thread::sleep_for(50ms);
    }
    EXPECT_EQ(s.status, JobStatus::Completed) << s.error_message;
    std::this_thread::sleep_for(8s);  // the other worker's grace, and a take-over's scan
    EXPECT_EQ(first.runs, 1);
    EXPECT_EQ(second.runs, 0) << "the job ran again on the other worker";
    w2.stop();
    w1.stop();
}

}  // namespace
}  // namespace server
