// The web page at / (built in, or --serve-html-path's file) with its script and style, and
// GET /health, which answers at once even while a generation runs.
#include <chrono>
#include <string>

#include "http_json.h"
#include "routes.h"
#include "web_assets.h"

namespace server {
namespace {

using nlohmann::json;

const WebAsset* find_asset(const std::string& path) {
    for (size_t i = 0; i < kWebAssetCount; ++i)
        if (path == kWebAssets[i].path) return &kWebAssets[i];
    return nullptr;
}

void send_asset(httplib::Response& res, const WebAsset& asset) {
    res.status = 200;
    res.set_header("Cache-Control", "no-cache");
    res.set_content(reinterpret_cast<const char*>(asset.data), asset.size, asset.mime_type);
}

}  // namespace

void register_web_routes(httplib::Server& svr, ServerState& state) {
    svr.Get("/", guarded([&state](const httplib::Request&, httplib::Response& res) {
                if (!state.index_html.empty()) {
                    res.set_content(state.index_html, "text/html; charset=utf-8");
                    return;
                }
                if (const WebAsset* index = find_asset("/index.html")) send_asset(res, *index);
            }));
    for (size_t i = 0; i < kWebAssetCount; ++i) {
        const WebAsset& asset = kWebAssets[i];
        if (std::string(asset.path) == "/index.html") continue;
        svr.Get(asset.path, guarded([&asset](const httplib::Request&, httplib::Response& res) {
                    send_asset(res, asset);
                }));
    }
    svr.Get("/favicon.ico",
            [](const httplib::Request&, httplib::Response& res) { res.status = 204; });

    svr.Get("/health", guarded([&state](const httplib::Request&, httplib::Response& res) {
                const QueueStats s = state.queue.stats();
                const auto uptime = std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::steady_clock::now() - state.started);
                const bool stopping = state.stopping.load();
                json body = {{"status", stopping ? "stopping" : "ok"},
                             {"uptime_seconds", uptime.count()},
                             {"queue",
                              {{"queued", s.queued},
                               {"generating", s.generating},
                               {"max_queue_size", state.config.max_queue_size}}},
                             {"jobs",
                              {{"accepted", s.accepted},
                               {"rejected", s.rejected},
                               {"completed", s.completed},
                               {"failed", s.failed},
                               {"cancelled", s.cancelled},
                               {"retained", s.retained}}}};
                json cluster = state.queue.cluster_health();
                if (!cluster.is_null()) body["cluster"] = std::move(cluster);
                send_json(res, stopping ? 503 : 200, body);
            }));
}

}  // namespace server
