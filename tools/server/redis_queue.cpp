#include "redis_queue.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "redis_jobs.h"
#include "redis_records.h"
#include "request_error.h"

namespace server {
namespace {

using nlohmann::json;
using namespace redis_jobs;
using Clock = std::chrono::steady_clock;

// A synchronous request waits through a Redis outage this long before it is answered 503.
constexpr std::chrono::seconds kWaitOutage{60};

RequestError unavailable(const std::exception& e) {
    return RequestError(503, "queue_unavailable", "",
                        std::string("the job queue is unavailable: ") + e.what());
}

// Runs `f`, turning a lost Redis into the routes' 503.
template <class F>
auto redis_call(F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const RedisError& e) {
        throw unavailable(e);
    }
}

int64_t to_int(const std::string& text) {
    return text.empty() ? 0 : std::strtoll(text.c_str(), nullptr, 10);
}

std::string make_id() {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    char buffer[48];
    std::snprintf(buffer, sizeof(buffer), "job_%08llx_%016llx",
                  static_cast<unsigned long long>(unix_now()),
                  static_cast<unsigned long long>(rng()));
    return buffer;
}

std::map<std::string, std::string> as_map(const RedisReply& r) {
    std::map<std::string, std::string> out;
    for (size_t i = 0; i + 1 < r.elements.size(); i += 2)
        out[r.elements[i].text()] = r.elements[i + 1].text();
    return out;
}

}  // namespace

RedisQueue::RedisQueue(RedisQueueSettings settings)
    : settings_(std::move(settings)), pool_(settings_.endpoint) {
    auto client = pool_.borrow();
    try {
        client->connect_now();
        client->command({"PING"}).expect("PING");
        client->command({"SADD", kModelsSet, settings_.model});
        value_limit_ = value_limit(*client);
    } catch (const std::exception& e) {
        throw std::runtime_error(std::string("--queue: cannot use Redis: ") + e.what() +
                                 " (is redis-server running there, and the password right?)");
    }
}

RedisQueue::~RedisQueue() {
    stop();
}

void RedisQueue::start() {
    if (!listener_.joinable()) listener_ = std::thread([this] { listen_done(); });
}

void RedisQueue::stop() {
    stopping_ = true;
    done_cv_.notify_all();
    if (listener_.joinable()) listener_.join();
}

void RedisQueue::listen_done() {
    RedisClient client(settings_.endpoint, std::chrono::seconds(5));
    bool subscribed = false;
    while (!stopping_) {
        try {
            if (!subscribed) {
                client.command({"SUBSCRIBE", kDoneChannel}).expect("SUBSCRIBE");
                subscribed = true;
            }
            const RedisReply m = client.next_message(std::chrono::milliseconds(200));
            if (m.elements.size() != 3 || m.elements[0].text() != "message") continue;
            std::lock_guard<std::mutex> lock(mutex_);
            auto it = waiting_.find(m.elements[2].text());
            if (it != waiting_.end()) {
                it->second = true;
                done_cv_.notify_all();
            }
        } catch (const std::exception&) {
            subscribed = false;  // the waiters poll meanwhile
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
    }
}

std::string RedisQueue::submit(JobSpec spec, const std::string& api, Retention retention) {
    if (stopping_) throw RequestError(503, "server_stopping", "", "the server is stopping");
    if (spec.source.kind.empty())
        throw RequestError(500, "server_error", "", "this request cannot be queued in Redis");
    const std::string id = make_id();
    const std::string payload = redis_records::payload_text(spec.source, spec.request.seed);
    if (payload.size() > value_limit_)
        throw RequestError(413, "payload_too_large", "",
                           "the request (" + std::to_string(payload.size() >> 10) +
                               " KiB) is larger than the job queue takes (" +
                               std::to_string(value_limit_ >> 10) +
                               " KiB: Redis's proto-max-bulk-len)");
    spec.source = {};
    const std::string format = spec.video() ? video_format_name(spec.output.video_format)
                                            : output_format_name(spec.output.format);
    const std::vector<std::string> fields = {
        "HSET",          job_key(id),
        "status",        "queued",
        "api",           api,
        "model",         settings_.model,
        "payload",       payload,
        "created",       std::to_string(unix_now()),
        "images",        std::to_string(spec.params.batch_count),
        "output_format", format,
        "mode",          spec.video() ? "vid_gen" : "img_gen",
        "fps",           std::to_string(spec.params.fps),
        "retention",     retention == Retention::Timed ? "timed" : "collect"};
    const std::string stream = stream_key(settings_.model);
    redis_call([&] {
        auto client = pool_.borrow();
        for (int attempt = 0;; ++attempt) {
            client->command({"WATCH", stream}).expect("WATCH");
            const long long depth = client->command({"XLEN", stream}).expect("XLEN").integer;
            if (depth >= settings_.max_pending) {
                client->command({"UNWATCH"});
                ++rejected_;
                throw RequestError(429, "queue_full", "",
                                   "the job queue of " + settings_.model + " is full (" +
                                       std::to_string(settings_.max_pending) +
                                       " jobs queued or generating); try again later");
            }
            const auto replies =
                client->pipeline({{"MULTI"}, fields, {"XADD", stream, "*", "id", id}, {"EXEC"}});
            const RedisReply& exec = replies.back().expect("EXEC");
            if (exec.is_nil()) continue;  // the stream changed meanwhile: count again
            if (exec.elements.size() == 2) record_entry(*client, id, exec.elements[1].text());
            break;
        }
    });
    ++accepted_;
    if (retention == Retention::UntilCollected) {
        std::lock_guard<std::mutex> lock(mutex_);
        specs_[id] = std::make_shared<JobSpec>(std::move(spec));
    }
    return id;
}

// The stream entry lets a cancel take a queued job out of the stream at once.
void RedisQueue::record_entry(RedisClient& client, const std::string& id,
                              const std::string& entry) {
    transact<bool>(client, id, {"entry"}, [&](const JobRead& r, std::vector<Command>& commands) {
        if (r.job.exists && r.job.status == "queued" && r.extra[0].empty())
            commands.push_back({"HSET", job_key(id), "entry", entry});
        return true;
    });
}

Lookup RedisQueue::read(RedisClient& client, const std::string& id, JobSnapshot* out) {
    const auto h = as_map(client.command({"HGETALL", job_key(id)}).expect("HGETALL"));
    if (h.empty() || !h.count("status"))
        return client.command({"EXISTS", tomb_key(id)}).integer ? Lookup::Expired
                                                                : Lookup::NotFound;
    if (!out) return Lookup::Found;
    auto field = [&h](const char* name) {
        auto it = h.find(name);
        return it == h.end() ? std::string() : it->second;
    };
    JobSnapshot& s = *out;
    s.id = id;
    s.api = field("api");
    s.status = job_status_from_name(field("status"));
    s.created = to_int(field("created"));
    s.started = to_int(field("started"));
    s.completed = to_int(field("completed"));
    s.progress = {static_cast<int>(to_int(field("step"))), static_cast<int>(to_int(field("steps"))),
                  static_cast<int>(to_int(field("image"))),
                  static_cast<int>(to_int(field("images")))};
    s.error_code = field("error_code");
    s.error_message = field("error_message");
    if (s.status == JobStatus::Completed) {
        try {
            s.images = redis_records::read_result(field("result"));
        } catch (const std::runtime_error& e) {
            throw RequestError(500, "server_error", "", "job " + id + ": " + e.what());
        }
    }
    if (s.status == JobStatus::Generating)
        s.preview = redis_records::read_preview(field("preview"));
    if (s.status == JobStatus::Queued && !field("entry").empty())
        s.queue_position = queue_position(client, field("model"), field("entry"));
    s.spec = spec_of(id, {field("mode"), field("output_format"), field("fps")}, field("settled"));
    return Lookup::Found;
}

// Entries before this one, less those delivered to workers already.
int RedisQueue::queue_position(RedisClient& client, const std::string& model,
                               const std::string& entry) {
    const std::string stream = stream_key(model);
    const auto replies =
        client.pipeline({{"XRANGE", stream, "-", entry}, {"XPENDING", stream, kGroup}});
    const long long before = static_cast<long long>(replies[0].elements.size());
    const long long delivered = replies[1].elements.empty() ? 0 : replies[1].elements[0].integer;
    return static_cast<int>(std::max(1LL, before - delivered));
}

// This node's parsed request (a synchronous job), else what the hash says of it.
std::shared_ptr<JobSpec> RedisQueue::spec_of(const std::string& id, const OutputFields& output,
                                             const std::string& settled) {
    std::shared_ptr<JobSpec> local;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = specs_.find(id);
        if (it != specs_.end()) local = it->second;
    }
    if (!local) {
        local = std::make_shared<JobSpec>();
        if (output.mode == "vid_gen") {
            local->params.mode = cli::Mode::VidGen;
            local->output.video_format =
                video_format_from_name(output.format).value_or(sd::image::VideoFormat::WebmVp8);
            local->params.fps = std::max(1, static_cast<int>(to_int(output.fps)));
        } else {
            local->output.format =
                output_format_from_name(output.format).value_or(sd::image::Format::Png);
        }
    }
    apply_settled(*local, settled);
    return local;
}

Lookup RedisQueue::find(const std::string& id, JobSnapshot* out) {
    return redis_call([&] {
        auto client = pool_.borrow();
        return read(*client, id, out);
    });
}

CancelResult RedisQueue::cancel(const std::string& id, JobSnapshot* out) {
    return redis_call([&] {
        auto client = pool_.borrow();
        const CancelAction action = transact<CancelAction>(
            *client, id, {"model", "entry"}, [&](const JobRead& r, std::vector<Command>& cmds) {
                const CancelAction a = decide_cancel(r.job);
                if (a == CancelAction::FinishNow) {
                    Outcome o{JobStatus::Cancelled, "cancelled", "job cancelled by client", "", ""};
                    cmds = finish_commands(id, r.extra[0], r.extra[1], o,
                                           settings_.result_ttl_seconds);
                } else if (a == CancelAction::AskWorker) {
                    cmds = {{"HSET", job_key(id), "cancel", "1"}, {"PUBLISH", kCancelChannel, id}};
                }
                return a;
            });
        if (action == CancelAction::Missing)
            return read(*client, id, nullptr) == Lookup::Expired ? CancelResult::Expired
                                                                 : CancelResult::NotFound;
        if (out) read(*client, id, out);
        switch (action) {
            case CancelAction::FinishNow:
                return CancelResult::Cancelled;
            case CancelAction::AskWorker:
                return CancelResult::Cancelling;
            default:
                return CancelResult::AlreadyFinished;
        }
    });
}

JobSnapshot RedisQueue::wait(const std::string& id) {
    return wait(id, nullptr);
}

JobSnapshot RedisQueue::wait(const std::string& id, const std::function<bool()>& abandoned) {
    bool cancel_asked = false;  // the client went away and its job's cancel was sent
    bool collect = false;       // a job of this node's synchronous requests: deleted once read
    {
        std::lock_guard<std::mutex> lock(mutex_);
        waiting_[id] = false;
        collect = specs_.count(id) > 0;
    }
    JobSnapshot s;
    Lookup lookup = Lookup::NotFound;
    Clock::time_point outage_since{};
    for (;;) {
        try {
            auto client = pool_.borrow();
            lookup = read(*client, id, &s);
            outage_since = {};
            if (lookup != Lookup::Found || is_finished(s.status)) {
                if (lookup == Lookup::Found && collect) client->command({"DEL", job_key(id)});
                break;
            }
        } catch (const RedisError& e) {
            if (outage_since == Clock::time_point{}) outage_since = Clock::now();
            if (Clock::now() - outage_since > kWaitOutage) {
                std::lock_guard<std::mutex> lock(mutex_);
                waiting_.erase(id);
                specs_.erase(id);
                throw unavailable(e);
            }
        }
        bool client_gone = false;
        {
            // Re-read the job each second (or when its done message comes); ask whether the
            // client is still there every 100 ms meanwhile.
            std::unique_lock<std::mutex> lock(mutex_);
            if (stopping_) break;
            for (int i = 0; i < 10 && !stopping_ && !waiting_[id]; ++i) {
                if (abandoned && !cancel_asked && abandoned()) {
                    client_gone = true;
                    break;
                }
                done_cv_.wait_for(lock, std::chrono::milliseconds(100),
                                  [&] { return stopping_.load() || waiting_[id]; });
            }
            waiting_[id] = false;
        }
        if (client_gone) {
            cancel_asked = true;
            try {
                cancel(id, nullptr);
            } catch (const std::exception&) {  // Redis away: the wait above goes on as before
            }
        }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    waiting_.erase(id);
    specs_.erase(id);
    if (lookup == Lookup::Found && !is_finished(s.status)) {  // stopping
        s.status = JobStatus::Cancelled;
        s.error_code = "cancelled";
        s.error_message = "the server is stopping";
    } else if (lookup != Lookup::Found) {
        s.id = id;
        s.status = JobStatus::Failed;
        s.error_code = "not_found";
        s.error_message = "the job is gone";
    }
    return s;
}

QueueStats RedisQueue::stats() {
    return redis_call([&] {
        auto client = pool_.borrow();
        const std::string stream = stream_key(settings_.model);
        const auto r = client->pipeline({{"XLEN", stream},
                                         {"XPENDING", stream, kGroup},
                                         {"HGETALL", stats_key(settings_.model)}});
        QueueStats s;
        const long long length = r[0].integer;
        const long long pending =
            r[1].is_error() || r[1].elements.empty() ? 0 : r[1].elements[0].integer;
        s.generating = static_cast<int>(pending);
        s.queued = static_cast<int>(std::max(0LL, length - pending));
        const auto counts = as_map(r[2]);
        auto count = [&counts](const char* k) {
            auto it = counts.find(k);
            return it == counts.end() ? uint64_t{0} : static_cast<uint64_t>(to_int(it->second));
        };
        s.completed = count("completed");
        s.failed = count("failed");
        s.cancelled = count("cancelled");
        s.accepted = accepted_;
        s.rejected = rejected_;
        return s;
    });
}

json RedisQueue::live_workers(RedisClient& client) {
    const RedisReply names = client.command({"SMEMBERS", kWorkersSet}).expect("SMEMBERS");
    json out = json::array();
    if (names.elements.empty()) return out;
    std::vector<std::string> mget = {"MGET"};
    for (const RedisReply& n : names.elements) mget.push_back(worker_key(n.text()));
    const RedisReply beats = client.command(mget).expect("MGET");
    for (size_t i = 0; i < names.elements.size() && i < beats.elements.size(); ++i) {
        if (beats.elements[i].is_nil()) {  // its heartbeat expired: gone
            client.command({"SREM", kWorkersSet, names.elements[i].text()});
            continue;
        }
        out.push_back(json::parse(beats.elements[i].text(), nullptr, false));
    }
    return out;
}

std::optional<JobSnapshot> RedisQueue::current() {
    return redis_call([&]() -> std::optional<JobSnapshot> {
        auto client = pool_.borrow();
        for (const json& w : live_workers(*client)) {
            const redis_records::Heartbeat beat = redis_records::read_heartbeat_json(w);
            if (beat.model != settings_.model) continue;
            const std::string& job = beat.job;
            JobSnapshot s;
            if (!job.empty() && read(*client, job, &s) == Lookup::Found &&
                s.status == JobStatus::Generating)
                return s;
        }
        return std::nullopt;
    });
}

json RedisQueue::cluster_health() {
    return redis_call([&] {
        auto client = pool_.borrow();
        json models = json::object();
        const RedisReply names = client->command({"SMEMBERS", kModelsSet}).expect("SMEMBERS");
        for (const RedisReply& n : names.elements) {
            const std::string stream = stream_key(n.text());
            const auto r = client->pipeline({{"XLEN", stream}, {"XPENDING", stream, kGroup}});
            const long long pending =
                r[1].is_error() || r[1].elements.empty() ? 0 : r[1].elements[0].integer;
            models[n.text()] = {{"queued", std::max(0LL, r[0].integer - pending)},
                                {"generating", pending}};
        }
        return json{{"backend", "redis"},
                    {"redis", settings_.endpoint.display()},
                    {"model", settings_.model},
                    {"models", models},
                    {"workers", live_workers(*client)}};
    });
}

}  // namespace server
