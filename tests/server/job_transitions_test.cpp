// The Redis queue's decisions (exactly-once completion), without Redis: a delivery runs a
// job only while it waits; a second outcome is dropped; a cancel finishes a queued job at
// once and asks the worker of a generating one; a job redelivered too often fails.
#include "job_transitions.h"

#include <gtest/gtest.h>

namespace server {
namespace {

StoredJob stored(const char* status, int attempts = 0, bool cancel = false) {
    StoredJob j;
    j.exists = true;
    j.status = status;
    j.attempts = attempts;
    j.cancel_requested = cancel;
    return j;
}

TEST(JobTransitions, StatusNamesRoundTrip) {
    for (JobStatus s : {JobStatus::Queued, JobStatus::Generating, JobStatus::Completed,
                        JobStatus::Failed, JobStatus::Cancelled})
        EXPECT_EQ(job_status_from_name(job_status_name(s)), s);
    EXPECT_EQ(job_status_from_name("bogus"), JobStatus::Failed);
}

TEST(JobTransitions, StartRunsAWaitingJob) {
    EXPECT_EQ(decide_start(stored("queued"), 3), StartAction::Run);
    // Generating on delivery: its worker died; this delivery takes it over.
    EXPECT_EQ(decide_start(stored("generating", 1), 3), StartAction::Run);
}

TEST(JobTransitions, StartDropsAFinishedOrMissingJob) {
    for (const char* done : {"completed", "failed", "cancelled"})
        EXPECT_EQ(decide_start(stored(done, 1), 3), StartAction::Drop) << done;
    EXPECT_EQ(decide_start(StoredJob{}, 3), StartAction::Drop);  // collected or expired
}

TEST(JobTransitions, StartHonoursACancelAskedBeforeIt) {
    EXPECT_EQ(decide_start(stored("generating", 1, true), 3), StartAction::Cancel);
}

TEST(JobTransitions, StartAbandonsAJobThatKeepsKillingWorkers) {
    EXPECT_EQ(decide_start(stored("generating", 2), 3), StartAction::Run);
    EXPECT_EQ(decide_start(stored("generating", 3), 3), StartAction::Abandon);
}

TEST(JobTransitions, OnlyTheFirstOutcomeIsWritten) {
    EXPECT_EQ(decide_finish(stored("generating", 1)), FinishAction::Write);
    // Two workers held it (a stalled one came back): the second outcome is not stored.
    for (const char* done : {"completed", "failed", "cancelled"})
        EXPECT_EQ(decide_finish(stored(done, 2)), FinishAction::Drop) << done;
    EXPECT_EQ(decide_finish(StoredJob{}), FinishAction::Drop);
}

TEST(JobTransitions, ACancelWinsOverImagesMadeMeanwhile) {
    EXPECT_EQ(outcome_status(stored("generating"), true, false), JobStatus::Completed);
    EXPECT_EQ(outcome_status(stored("generating"), false, false), JobStatus::Failed);
    EXPECT_EQ(outcome_status(stored("generating"), true, true), JobStatus::Cancelled);
    EXPECT_EQ(outcome_status(stored("generating", 1, true), true, false), JobStatus::Cancelled);
}

TEST(JobTransitions, Cancel) {
    EXPECT_EQ(decide_cancel(stored("queued")), CancelAction::FinishNow);
    EXPECT_EQ(decide_cancel(stored("generating", 1)), CancelAction::AskWorker);
    for (const char* done : {"completed", "failed", "cancelled"})
        EXPECT_EQ(decide_cancel(stored(done)), CancelAction::AlreadyDone) << done;
    EXPECT_EQ(decide_cancel(StoredJob{}), CancelAction::Missing);
}

}  // namespace
}  // namespace server
