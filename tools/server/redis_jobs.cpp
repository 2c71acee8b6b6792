#include "redis_jobs.h"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <stdexcept>

namespace server::redis_jobs {

long long unix_now() {
    return static_cast<long long>(std::time(nullptr));
}

size_t value_limit(RedisClient& client) {
    // Redis's defaults where CONFIG is renamed or disabled.
    auto config = [&client](const char* name, size_t fallback) {
        const RedisReply r = client.command({"CONFIG", "GET", name});
        if (r.is_error() || r.elements.size() != 2) return fallback;
        const long long value = std::strtoll(r.elements[1].text().c_str(), nullptr, 10);
        return value > 0 ? static_cast<size_t>(value) : fallback;
    };
    const size_t limit = std::min(config("proto-max-bulk-len", size_t{512} << 20),
                                  config("client-query-buffer-limit", size_t{1} << 30));
    // The command's other arguments and the protocol's framing share the query buffer.
    constexpr size_t kFraming = size_t{64} << 10;
    return limit > 2 * kFraming ? limit - kFraming : limit / 2;
}

namespace {

JobRead read_job(RedisClient& client, const std::string& id,
                 const std::vector<std::string>& extra_fields) {
    Command hmget = {"HMGET", job_key(id), "status", "attempts", "cancel"};
    hmget.insert(hmget.end(), extra_fields.begin(), extra_fields.end());
    const RedisReply r = client.command(hmget).expect("HMGET");
    JobRead out;
    if (r.elements.size() != hmget.size() - 2) throw std::runtime_error("HMGET: short reply");
    out.job.exists = !r.elements[0].is_nil();
    out.job.status = r.elements[0].text();
    out.job.attempts = r.elements[1].is_nil() ? 0 : std::atoi(r.elements[1].text().c_str());
    out.job.cancel_requested = r.elements[2].text() == "1";
    for (size_t i = 3; i < r.elements.size(); ++i) out.extra.push_back(r.elements[i].text());
    return out;
}

}  // namespace

template <class Result>
Result transact(RedisClient& client, const std::string& id,
                const std::vector<std::string>& extra_fields,
                const std::function<Result(const JobRead&, std::vector<Command>&)>& decide) {
    for (int attempt = 0;; ++attempt) {
        client.command({"WATCH", job_key(id)}).expect("WATCH");
        std::vector<Command> commands;
        const Result result = decide(read_job(client, id, extra_fields), commands);
        if (commands.empty()) {
            client.command({"UNWATCH"});
            return result;
        }
        std::vector<Command> batch = {{"MULTI"}};
        batch.insert(batch.end(), commands.begin(), commands.end());
        batch.push_back({"EXEC"});
        const std::vector<RedisReply> replies = client.pipeline(batch);
        const RedisReply& exec = replies.back();
        exec.expect("EXEC");
        if (!exec.is_nil()) return result;
        if (attempt > 100) throw std::runtime_error("job " + id + " keeps changing; gave up");
    }
}

template bool transact<bool>(RedisClient&, const std::string&, const std::vector<std::string>&,
                             const std::function<bool(const JobRead&, std::vector<Command>&)>&);
template StartAction transact<StartAction>(
    RedisClient&, const std::string&, const std::vector<std::string>&,
    const std::function<StartAction(const JobRead&, std::vector<Command>&)>&);
template FinishAction transact<FinishAction>(
    RedisClient&, const std::string&, const std::vector<std::string>&,
    const std::function<FinishAction(const JobRead&, std::vector<Command>&)>&);
template CancelAction transact<CancelAction>(
    RedisClient&, const std::string&, const std::vector<std::string>&,
    const std::function<CancelAction(const JobRead&, std::vector<Command>&)>&);

std::vector<Command> drop_entry_commands(const std::string& model, const std::string& entry) {
    if (entry.empty()) return {};
    return {{"XACK", stream_key(model), kGroup, entry}, {"XDEL", stream_key(model), entry}};
}

std::vector<Command> finish_commands(const std::string& id, const std::string& model,
                                     const std::string& entry, const Outcome& outcome,
                                     int ttl_seconds) {
    const std::string key = job_key(id);
    const std::string ttl = std::to_string(ttl_seconds);
    std::vector<Command> out = {
        {"HSET", key, "status", job_status_name(outcome.status), "completed",
         std::to_string(unix_now()), "error_code", outcome.error_code, "error_message",
         outcome.error_message, "result", outcome.result, "settled", outcome.settled},
        {"HDEL", key, "preview"},
        {"EXPIRE", key, ttl},
        // The tombstone outlives the result by 6 hours (as the in-process queue's).
        {"SET", tomb_key(id), "1", "EX", std::to_string(ttl_seconds + 6 * 3600)},
        {"HINCRBY", stats_key(model), job_status_name(outcome.status), "1"},
        {"PUBLISH", kDoneChannel, id}};
    for (Command& c : drop_entry_commands(model, entry)) out.push_back(std::move(c));
    return out;
}

}  // namespace server::redis_jobs
