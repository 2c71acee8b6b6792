#include "worker_loop.h"

#include <unistd.h>

#include <chrono>
#include <random>

#include "log_output.h"
#include "redis_jobs.h"
#include "redis_records.h"
#include "request_error.h"
#include "request_replay.h"

namespace server {
namespace {

using namespace redis_jobs;

constexpr auto kReportInterval = std::chrono::milliseconds(250);
constexpr int kHeartbeatSeconds = 5;  // a worker silent this long is listed no more
// After an outage, the wait before taking a job over: the longest a live worker's reporter
// takes to reach Redis again, and one heartbeat. The heartbeats may have expired while Redis
// was away; until their workers renew them, each job they run looks abandoned.
constexpr auto kClaimGraceAfterOutage = RedisClient::kMaxBackoff + std::chrono::seconds(1);

std::string default_name() {
    char host[128] = "host";
    ::gethostname(host, sizeof(host) - 1);
    std::mt19937 rng{std::random_device{}()};
    char suffix[16];
    std::snprintf(suffix, sizeof(suffix), "%04x", static_cast<unsigned>(rng() & 0xFFFF));
    return std::string(host) + ":" + std::to_string(::getpid()) + ":" + suffix;
}

// The entry id and job id of an XREADGROUP / XAUTOCLAIM entry ([id, [field, value...]]).
bool entry_of(const RedisReply& e, std::string& entry, std::string& id) {
    if (e.elements.size() < 2) return false;
    entry = e.elements[0].text();
    const RedisReply& fields = e.elements[1];
    for (size_t i = 0; i + 1 < fields.elements.size(); i += 2)
        if (fields.elements[i].text() == "id") id = fields.elements[i + 1].text();
    return !id.empty();
}

// Whether job `id` is being run by a worker that is still alive: its hash says generating by
// `worker`, whose heartbeat names the job. Its delivery can look idle past the visibility
// timeout with its worker alive when Redis was away for a while (a restart keeps the
// delivery's time, not the reporter's refreshes): taking it over would run it twice.
bool run_by_a_live_worker(RedisClient& client, const std::string& id, const std::string& self) {
    const RedisReply r = client.command({"HMGET", job_key(id), "status", "worker"});
    if (r.elements.size() != 2 || r.elements[0].is_nil() || r.elements[1].is_nil()) return false;
    const std::string worker = r.elements[1].text();
    if (r.elements[0].text() != "generating" || worker == self) return false;
    const RedisReply beat = client.command({"GET", worker_key(worker)});
    if (beat.is_nil() || beat.is_error()) return false;
    return redis_records::read_heartbeat(beat.text()).job == id;
}

}  // namespace

struct RedisWorker::Current {
    std::string id, entry;
    std::atomic<bool> cancelled{false};
    std::atomic<int> step{0}, steps{0}, image{0}, images{1};
    std::mutex preview_mutex;
    std::shared_ptr<const JobPreview> preview;
};

RedisWorker::RedisWorker(WorkerSettings settings, JobRunner& runner)
    : settings_(std::move(settings)),
      runner_(runner),
      name_(settings_.name.empty() ? default_name() : settings_.name) {}

RedisWorker::~RedisWorker() {
    stop();
}

void RedisWorker::start() {
    if (taker_.joinable()) return;
    taker_ = std::thread([this] { take_jobs(); });
    reporter_ = std::thread([this] { report(); });
    listener_ = std::thread([this] { listen_cancels(); });
}

void RedisWorker::stop() {
    if (stopping_.exchange(true)) return;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (current_) runner_.interrupt();
    }
    for (std::thread* t : {&taker_, &reporter_, &listener_})
        if (t->joinable()) t->join();
    try {
        RedisClient client(settings_.endpoint, std::chrono::seconds(2));
        client.pipeline({{"DEL", worker_key(name_)}, {"SREM", kWorkersSet, name_}});
    } catch (const std::exception&) {
        // Its heartbeat expires by itself.
    }
}

void RedisWorker::backoff(int& step) {
    const int ms = std::min(5000, 200 << std::min(step, 5));
    ++step;
    for (int waited = 0; waited < ms && !stopping_; waited += 50)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

void RedisWorker::take_jobs() {
    // Blocking reads wait 1 s; the replies may take longer than that.
    RedisClient client(settings_.endpoint, std::chrono::seconds(10));
    const std::string stream = stream_key(settings_.model);
    bool group_ready = false;
    int failures = 0;
    while (!stopping_) {
        try {
            if (!group_ready) {
                const RedisReply r =
                    client.command({"XGROUP", "CREATE", stream, kGroup, "0", "MKSTREAM"});
                if (r.is_error() && r.str.rfind("BUSYGROUP", 0) != 0) r.expect("XGROUP CREATE");
                client.command({"SADD", kModelsSet, settings_.model});
                group_ready = true;
                if (failures) {
                    cli::log_info("worker %s: Redis is back", name_.c_str());
                    claim_after_ = std::chrono::steady_clock::now() + kClaimGraceAfterOutage;
                }
                failures = 0;
            }
            std::string entry, id;
            if (next_delivery(client, entry, id)) handle(client, entry, id);
        } catch (const RedisError& e) {
            if (failures == 0) cli::log_warn("worker %s: %s; retrying", name_.c_str(), e.what());
            group_ready = false;
            backoff(failures);
        } catch (const std::exception& e) {
            cli::log_error("worker %s: %s", name_.c_str(), e.what());
            group_ready = false;
            backoff(failures);
        }
    }
}

bool RedisWorker::next_delivery(RedisClient& client, std::string& entry, std::string& id) {
    const std::string stream = stream_key(settings_.model);
    // A delivery idle past the visibility timeout: its worker is gone.
    // The scan goes on from where the last one stopped (each looks at a few entries).
    RedisReply claimed;
    if (std::chrono::steady_clock::now() >= claim_after_) {
        claimed =
            client
                .command({"XAUTOCLAIM", stream, kGroup, name_,
                          std::to_string(settings_.visibility_ms), claim_cursor_, "COUNT", "1"})
                .expect("XAUTOCLAIM");
        claim_cursor_ = claimed.elements.empty() ? "0-0" : claimed.elements[0].text();
    }
    if (claimed.elements.size() >= 2)
        for (const RedisReply& e : claimed.elements[1].elements)
            if (entry_of(e, entry, id)) {
                // Its worker's reporter claims it back within a report interval.
                if (run_by_a_live_worker(client, id, name_)) {
                    entry.clear();
                    id.clear();
                    continue;
                }
                cli::log_info("worker %s: took over job %s (its worker stopped answering)",
                              name_.c_str(), id.c_str());
                return true;
            }
    const RedisReply r = client.command({"XREADGROUP", "GROUP", kGroup, name_, "COUNT", "1",
                                         "BLOCK", "1000", "STREAMS", stream, ">"});
    if (r.is_error() && r.str.rfind("NOGROUP", 0) == 0)
        throw RedisError("the consumer group is gone (Redis restarted empty?)");
    r.expect("XREADGROUP");
    if (r.elements.empty() || r.elements[0].elements.size() < 2) return false;
    for (const RedisReply& e : r.elements[0].elements[1].elements)
        if (entry_of(e, entry, id)) return true;
    return false;
}

StartAction RedisWorker::begin(RedisClient& client, const std::string& entry, const std::string& id,
                               std::string& payload) {
    const std::string model = settings_.model;
    return transact<StartAction>(
        client, id, {"payload"}, [&](const JobRead& r, std::vector<Command>& cmds) {
            const StartAction a = decide_start(r.job, settings_.max_attempts);
            payload = r.extra[0];
            Outcome o;
            switch (a) {
                case StartAction::Run:
                    cmds = {
                        {"HSET", job_key(id), "status", "generating", "started",
                         std::to_string(unix_now()), "worker", name_, "entry", entry, "step", "0"},
                        {"HINCRBY", job_key(id), "attempts", "1"}};
                    break;
                case StartAction::Drop:
                    cmds = drop_entry_commands(model, entry);
                    break;
                case StartAction::Cancel:
                    o = {JobStatus::Cancelled, "cancelled", "job cancelled by client", "", ""};
                    cmds = finish_commands(id, model, entry, o, settings_.result_ttl_seconds);
                    break;
                case StartAction::Abandon:
                    o = {JobStatus::Failed, "worker_lost",
                         "the job was started " + std::to_string(r.job.attempts) +
                             " times and no worker finished it",
                         "", ""};
                    cmds = finish_commands(id, model, entry, o, settings_.result_ttl_seconds);
                    break;
            }
            return a;
        });
}

RunOutcome RedisWorker::run_payload(const std::shared_ptr<Current>& job, const std::string& payload,
                                    std::optional<JobSpec>& spec) {
    RunOutcome outcome;
    try {
        const redis_records::Payload p = redis_records::read_payload(payload);
        spec = replay_request(p.source, p.seed, ParseContext{settings_.defaults, settings_.limits});
        job->images = spec->params.batch_count;
    } catch (const std::exception& e) {
        outcome.error = std::string("the worker cannot take this request: ") + e.what();
        return outcome;
    }
    if (job->cancelled || stopping_) return outcome;
    RunHooks hooks;
    hooks.cancelled = &job->cancelled;
    int last_step = 0;
    hooks.on_step = [job, &last_step](int step, int steps) {
        advance_progress(*job, last_step, step, steps);
    };
    hooks.on_preview = [job](JobPreview preview) {
        preview.image = job->image;
        auto shared = std::make_shared<const JobPreview>(std::move(preview));
        std::lock_guard<std::mutex> lock(job->preview_mutex);
        job->preview = std::move(shared);
    };
    return runner_.run(*spec, hooks);
}

void RedisWorker::handle(RedisClient& client, const std::string& entry, const std::string& id) {
    std::string payload;
    if (begin(client, entry, id, payload) != StartAction::Run) return;
    auto job = std::make_shared<Current>();
    job->id = id;
    job->entry = entry;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        current_ = job;
    }
    std::optional<JobSpec> spec;
    RunOutcome outcome = run_payload(job, payload, spec);
    // Stopping: left unacknowledged for another worker to take over.
    if (!stopping_ || job->cancelled) store_outcome(client, *job, outcome, spec ? &*spec : nullptr);
    // Current until its outcome is stored: while the store waits out a Redis outage, the
    // heartbeat names the job and the reporter keeps its delivery fresh, so that no other
    // worker takes a job over that has run and waits to be stored.
    std::lock_guard<std::mutex> lock(mutex_);
    current_.reset();
}

void RedisWorker::store_outcome(RedisClient& client, const Current& job, RunOutcome& outcome,
                                const JobSpec* spec) {
    std::string result = outcome.ok ? redis_records::result_text(outcome.images) : "";
    const std::string settled = spec ? settled_text(*spec) : "";
    int failures = 0;
    for (;;) {
        try {
            if (const size_t limit = value_limit(client); result.size() > limit) {
                outcome.ok = false;
                outcome.error = "the result (" + std::to_string(result.size() >> 10) +
                                " KiB) is larger than the job queue takes (" +
                                std::to_string(limit >> 10) + " KiB: Redis's proto-max-bulk-len)";
                result.clear();
            }
            const FinishAction action = transact<FinishAction>(
                client, job.id, {}, [&](const JobRead& r, std::vector<Command>& cmds) {
                    const FinishAction a = decide_finish(r.job);
                    if (a == FinishAction::Drop) {
                        cmds = drop_entry_commands(settings_.model, job.entry);
                        return a;
                    }
                    Outcome o;
                    o.status = outcome_status(r.job, outcome.ok, job.cancelled);
                    o.settled = settled;
                    if (o.status == JobStatus::Completed) {
                        o.result = result;
                    } else if (o.status == JobStatus::Cancelled) {
                        o.error_code = "cancelled";
                        o.error_message = "job cancelled by client";
                    } else {
                        o.error_code = "generation_failed";
                        o.error_message =
                            outcome.error.empty() ? "the generation failed" : outcome.error;
                    }
                    cmds = finish_commands(job.id, settings_.model, job.entry, o,
                                           settings_.result_ttl_seconds);
                    return a;
                });
            if (action == FinishAction::Drop)
                cli::log_info("worker %s: job %s had an outcome already; not stored again",
                              name_.c_str(), job.id.c_str());
            return;
        } catch (const RedisError& e) {
            // Hold the outcome until Redis is back (or give the job up when stopping: it
            // stays unacknowledged and another worker runs it again).
            if (failures == 0)
                cli::log_warn("worker %s: cannot store job %s yet: %s", name_.c_str(),
                              job.id.c_str(), e.what());
            if (stopping_) return;
            backoff(failures);
        }
    }
}

void RedisWorker::report() {
    RedisClient client(settings_.endpoint, std::chrono::seconds(2));
    auto next_beat = std::chrono::steady_clock::now();
    while (!stopping_) {
        try {
            if (std::chrono::steady_clock::now() >= next_beat) {
                std::string job;
                {
                    std::lock_guard<std::mutex> lock(mutex_);
                    if (current_) job = current_->id;
                }
                const std::string beat = redis_records::heartbeat_text(
                    {name_, settings_.model, job, static_cast<int>(::getpid())});
                client.pipeline(
                    {{"SET", worker_key(name_), beat, "EX", std::to_string(kHeartbeatSeconds)},
                     {"SADD", kWorkersSet, name_}});
                next_beat = std::chrono::steady_clock::now() + std::chrono::seconds(1);
            }
            report_once(client);
        } catch (const std::exception&) {
            // Redis away: the next tick tries again (the client backs off).
        }
        std::this_thread::sleep_for(kReportInterval);
    }
}

// The running job's progress and preview, its delivery kept fresh, and a cancel flagged in
// its hash (should the pub/sub message have been missed).
void RedisWorker::report_once(RedisClient& client) {
    std::shared_ptr<Current> job;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        job = current_;
    }
    if (!job) return;
    std::string preview;
    {
        std::lock_guard<std::mutex> lock(job->preview_mutex);
        if (job->preview) preview = redis_records::preview_text(*job->preview);
    }
    const bool cancel = transact<bool>(
        client, job->id, {"worker"}, [&](const JobRead& r, std::vector<Command>& cmds) {
            if (!r.job.exists || r.job.status != "generating" || r.extra[0] != name_) return false;
            Command hset = {"HSET",   job_key(job->id),
                            "step",   std::to_string(job->step.load()),
                            "steps",  std::to_string(job->steps.load()),
                            "image",  std::to_string(job->image.load()),
                            "images", std::to_string(job->images.load())};
            if (!preview.empty()) {
                hset.push_back("preview");
                hset.push_back(preview);
            }
            cmds = {
                hset,
                {"XCLAIM", stream_key(settings_.model), kGroup, name_, "0", job->entry, "JUSTID"}};
            return r.job.cancel_requested;
        });
    if (cancel) cancel_job(*job, "its hash");
}

void RedisWorker::cancel_job(Current& job, const char* via) {
    if (job.cancelled.exchange(true)) return;
    cli::log_info("worker %s: cancelling job %s (cancel via %s)", name_.c_str(), job.id.c_str(),
                  via);
    runner_.interrupt();
}

void RedisWorker::listen_cancels() {
    RedisClient client(settings_.endpoint, std::chrono::seconds(5));
    bool subscribed = false;
    while (!stopping_) {
        try {
            if (!subscribed) {
                client.command({"SUBSCRIBE", kCancelChannel}).expect("SUBSCRIBE");
                subscribed = true;
            }
            const RedisReply m = client.next_message(std::chrono::milliseconds(200));
            if (m.elements.size() != 3 || m.elements[0].text() != "message") continue;
            std::lock_guard<std::mutex> lock(mutex_);
            if (current_ && current_->id == m.elements[2].text()) cancel_job(*current_, "pub/sub");
        } catch (const std::exception&) {
            subscribed = false;  // report_once reads the flag from the hash meanwhile
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
    }
}

}  // namespace server
