// The job queue with a stand-in runner: order, one at a time, the bound, cancellation,
// retention, progress and stopping.
#include "job_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "request_error.h"

namespace server {
namespace {

using namespace std::chrono_literals;

// Runs a job in `steps` steps; while `hold` is set each run waits at its first step until
// released or cancelled. Records the seeds in the order run and the most runs at once.
class FakeRunner : public JobRunner {
  public:
    RunOutcome run(JobSpec& spec, const RunHooks& hooks) override {
        const int now = ++running;
        max_running = std::max(max_running.load(), now);
        {
            std::lock_guard<std::mutex> lock(mutex);
            order.push_back(spec.request.seed);
        }
        RunOutcome out;
        for (int image = 0; image < spec.params.batch_count; ++image) {
            for (int step = 1; step <= steps; ++step) {
                std::unique_lock<std::mutex> lock(mutex);
                ++started_steps;
                cv.notify_all();
                cv.wait_for(lock, 10s, [&] { return !hold || hooks.cancelled->load(); });
                lock.unlock();
                hooks.on_step(step, steps);
                if (hooks.cancelled->load()) {
                    --running;
                    out.error = "cancelled";
                    return out;
                }
            }
            out.images.push_back({"b64", spec.request.seed + image, "params", 8, 8});
        }
        --running;
        out.ok = !fail;
        if (fail) out.error = "the fake failed";
        return out;
    }
    void interrupt() override {
        ++interrupts;
        cv.notify_all();
    }
    void release() {
        std::lock_guard<std::mutex> lock(mutex);
        hold = false;
        cv.notify_all();
    }
    void wait_for_steps(int n) {
        std::unique_lock<std::mutex> lock(mutex);
        cv.wait_for(lock, 10s, [&] { return started_steps >= n; });
    }

    std::mutex mutex;
    std::condition_variable cv;
    bool hold = false;
    bool fail = false;
    int steps = 2;
    int started_steps = 0;
    std::vector<int64_t> order;
    std::atomic<int> running{0}, max_running{0}, interrupts{0};
};

JobSpec spec_with_seed(int64_t seed, int batch = 1) {
    JobSpec spec;
    spec.request.seed = seed;
    spec.params.batch_count = batch;
    return spec;
}

TEST(ServerJobQueue, RunsJobsOneAtATimeInArrivalOrder) {
    FakeRunner runner;
    JobQueue queue(runner, {16, 60});
    queue.start();
    std::vector<std::string> ids;
    for (int i = 0; i < 6; ++i)
        ids.push_back(queue.submit(spec_with_seed(100 + i), "sdcpp", Retention::Timed));
    for (const std::string& id : ids) {
        JobSnapshot done = queue.wait(id);
        EXPECT_EQ(done.status, JobStatus::Completed);
        ASSERT_TRUE(done.images);
        EXPECT_EQ(done.images->size(), 1u);
    }
    EXPECT_EQ(runner.order, (std::vector<int64_t>{100, 101, 102, 103, 104, 105}));
    EXPECT_EQ(runner.max_running.load(), 1);
    const QueueStats s = queue.stats();
    EXPECT_EQ(s.accepted, 6u);
    EXPECT_EQ(s.completed, 6u);
    EXPECT_EQ(s.retained, 6);
}

TEST(ServerJobQueue, AFullQueueAnswers429) {
    FakeRunner runner;
    runner.hold = true;
    JobQueue queue(runner, {2, 60});
    queue.start();
    const std::string a = queue.submit(spec_with_seed(1), "sdcpp", Retention::Timed);
    queue.submit(spec_with_seed(2), "sdcpp", Retention::Timed);
    try {
        queue.submit(spec_with_seed(3), "sdcpp", Retention::Timed);
        ADD_FAILURE() << "a third job was accepted";
    } catch (const RequestError& e) {
        EXPECT_EQ(e.status(), 429);
    }
    EXPECT_EQ(queue.stats().rejected, 1u);
    runner.release();
    EXPECT_EQ(queue.wait(a).status, JobStatus::Completed);
    // Room again once jobs finish.
    EXPECT_NO_THROW(queue.submit(spec_with_seed(4), "sdcpp", Retention::Timed));
}

TEST(ServerJobQueue, CancelsAQueuedJobAtOnceAndAGeneratingOneAtItsNextStep) {
    FakeRunner runner;
    runner.hold = true;
    JobQueue queue(runner, {8, 60});
    queue.start();
    const std::string running = queue.submit(spec_with_seed(1), "sdcpp", Retention::Timed);
    const std::string queued = queue.submit(spec_with_seed(2), "sdcpp", Retention::Timed);
    runner.wait_for_steps(1);
    JobSnapshot snap;
    ASSERT_EQ(queue.find(queued, &snap), Lookup::Found);
    EXPECT_EQ(snap.status, JobStatus::Queued);
    EXPECT_EQ(snap.queue_position, 1);
    EXPECT_EQ(queue.cancel(queued, &snap), CancelResult::Cancelled);
    EXPECT_EQ(snap.status, JobStatus::Cancelled);
    EXPECT_EQ(queue.cancel(running, &snap), CancelResult::Cancelling);
    EXPECT_GE(runner.interrupts.load(), 1);
    JobSnapshot done = queue.wait(running);
    EXPECT_EQ(done.status, JobStatus::Cancelled);
    EXPECT_EQ(done.error_code, "cancelled");
    EXPECT_EQ(queue.cancel(running, &snap), CancelResult::AlreadyFinished);
    EXPECT_EQ(runner.order, std::vector<int64_t>{1});  // the cancelled job never ran
    EXPECT_EQ(queue.stats().cancelled, 2u);
}

// A waiter whose client has gone (abandoned() turns true) cancels its job, generating or
// queued, and the next job starts.
TEST(ServerJobQueue, AnAbandonedWaitCancelsItsJob) {
    FakeRunner runner;
    runner.hold = true;
    JobQueue queue(runner, {8, 60});
    queue.start();
    const std::string running = queue.submit(spec_with_seed(1), "sdapi", Retention::UntilCollected);
    const std::string queued = queue.submit(spec_with_seed(2), "sdapi", Retention::UntilCollected);
    const std::string next = queue.submit(spec_with_seed(3), "sdcpp", Retention::Timed);
    runner.wait_for_steps(1);
    int asked = 0;
    auto abandoned = [&] { return ++asked >= 2; };  // gone at the second look
    JobSnapshot done = queue.wait(queued, abandoned);
    EXPECT_EQ(done.status, JobStatus::Cancelled);
    EXPECT_EQ(done.error_message, "the client disconnected");
    done = queue.wait(running, [] { return true; });
    EXPECT_EQ(done.status, JobStatus::Cancelled);
    runner.release();
    EXPECT_EQ(queue.wait(next).status, JobStatus::Completed);
    EXPECT_EQ(runner.order, (std::vector<int64_t>{1, 3}));
}

TEST(ServerJobQueue, ReportsProgressAcrossTheBatch) {
    FakeRunner runner;
    runner.hold = true;
    runner.steps = 3;
    JobQueue queue(runner, {8, 60});
    queue.start();
    const std::string id = queue.submit(spec_with_seed(1, 2), "sdcpp", Retention::Timed);
    runner.wait_for_steps(1);
    runner.release();
    JobSnapshot done = queue.wait(id);
    EXPECT_EQ(done.progress.steps, 6);
    EXPECT_EQ(done.progress.step, 6);
    EXPECT_EQ(done.progress.image, 1);
    EXPECT_EQ(done.progress.images, 2);
    ASSERT_TRUE(done.images);
    EXPECT_EQ((*done.images)[1].seed, 2);
}

// Hands one preview over at its first step, then waits to be released.
class PreviewRunner : public JobRunner {
  public:
    RunOutcome run(JobSpec& spec, const RunHooks& hooks) override {
        hooks.on_step(1, 2);
        hooks.on_preview({1, 0, "cHJldmlldw==", 8, 8});
        previewed.set_value();
        release.get_future().wait_for(10s);
        hooks.on_step(2, 2);
        RunOutcome out;
        out.images.push_back({"b64", spec.request.seed, "params", 64, 64});
        out.ok = true;
        return out;
    }
    void interrupt() override {}
    std::promise<void> previewed, release;
};

TEST(ServerJobQueue, AGeneratingJobShowsItsLatestPreview) {
    PreviewRunner runner;
    JobQueue queue(runner, {8, 60});
    queue.start();
    const std::string id = queue.submit(spec_with_seed(3), "sdcpp", Retention::Timed);
    ASSERT_EQ(runner.previewed.get_future().wait_for(10s), std::future_status::ready);
    JobSnapshot during;
    ASSERT_EQ(queue.find(id, &during), Lookup::Found);
    EXPECT_EQ(during.status, JobStatus::Generating);
    ASSERT_TRUE(during.preview);
    EXPECT_EQ(during.preview->step, 1);
    EXPECT_EQ(during.preview->image, 0);
    EXPECT_EQ(during.preview->png_b64, "cHJldmlldw==");
    EXPECT_EQ(during.preview->width, 8u);
    runner.release.set_value();
    const JobSnapshot done = queue.wait(id);
    EXPECT_EQ(done.status, JobStatus::Completed);
    EXPECT_FALSE(done.preview);  // the images replace it
}

TEST(ServerJobQueue, FinishedNativeJobsExpireAndCollectedSyncJobsAreForgotten) {
    FakeRunner runner;
    JobQueue queue(runner, {8, 1});
    queue.start();
    const std::string native = queue.submit(spec_with_seed(1), "sdcpp", Retention::Timed);
    const std::string sync = queue.submit(spec_with_seed(2), "openai", Retention::UntilCollected);
    EXPECT_EQ(queue.wait(sync).status, JobStatus::Completed);
    EXPECT_EQ(queue.find(sync, nullptr), Lookup::NotFound);
    queue.wait(native);
    EXPECT_EQ(queue.find(native, nullptr), Lookup::Found);
    std::this_thread::sleep_for(1500ms);
    EXPECT_EQ(queue.find(native, nullptr), Lookup::Expired);
    EXPECT_EQ(queue.cancel(native, nullptr), CancelResult::Expired);
    EXPECT_EQ(queue.find("job_unknown", nullptr), Lookup::NotFound);
}

TEST(ServerJobQueue, AFailedRunIsAFailedJobWithItsReason) {
    FakeRunner runner;
    runner.fail = true;
    JobQueue queue(runner, {8, 60});
    queue.start();
    JobSnapshot done = queue.wait(queue.submit(spec_with_seed(1), "sdcpp", Retention::Timed));
    EXPECT_EQ(done.status, JobStatus::Failed);
    EXPECT_EQ(done.error_code, "generation_failed");
    EXPECT_EQ(done.error_message, "the fake failed");
    EXPECT_EQ(queue.stats().failed, 1u);
}

TEST(ServerJobQueue, StopCancelsEverythingAndWakesWaiters) {
    FakeRunner runner;
    runner.hold = true;
    JobQueue queue(runner, {8, 60});
    queue.start();
    const std::string a = queue.submit(spec_with_seed(1), "openai", Retention::UntilCollected);
    const std::string b = queue.submit(spec_with_seed(2), "openai", Retention::UntilCollected);
    runner.wait_for_steps(1);
    auto wait_a = std::async(std::launch::async, [&] { return queue.wait(a); });
    auto wait_b = std::async(std::launch::async, [&] { return queue.wait(b); });
    std::this_thread::sleep_for(50ms);
    queue.stop();
    EXPECT_EQ(wait_a.get().status, JobStatus::Cancelled);
    EXPECT_EQ(wait_b.get().status, JobStatus::Cancelled);
    try {
        queue.submit(spec_with_seed(3), "sdcpp", Retention::Timed);
        ADD_FAILURE() << "accepted after stop";
    } catch (const RequestError& e) {
        EXPECT_EQ(e.status(), 503);
    }
}

}  // namespace
}  // namespace server
