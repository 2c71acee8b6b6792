#include "server_options.h"

#include <algorithm>
#include <charconv>
#include <functional>

#include "cli_options.h"
#include "help_layout.h"
#include "redis_url.h"

namespace server {
namespace {

struct ServerOption {
    const char* short_name;
    const char* long_name;
    const char* value_hint;  // "" for a switch
    std::string default_text;
    const char* help;
    std::function<void(ServerConfig&, const std::string&)> apply;
};

int to_int(const std::string& option, const std::string& value, int min, int max) {
    int out = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
    if (value.empty() || ec != std::errc() || end != value.data() + value.size())
        throw cli::UsageError("invalid value '" + value + "' for " + option +
                              ": expected an integer");
    if (out < min || out > max)
        throw cli::UsageError("invalid value '" + value + "' for " + option + ": must be in " +
                              std::to_string(min) + ".." + std::to_string(max));
    return out;
}

const std::vector<ServerOption>& server_options() {
    static const std::vector<ServerOption> options = {
        {"-l", "--listen-ip", "<string>", "127.0.0.1", "address to listen on",
         [](ServerConfig& c, const std::string& v) {
             if (v.empty()) throw cli::UsageError("-l/--listen-ip: the address is empty");
             c.listen_ip = v;
         }},
        {"", "--listen-port", "<int>", "1234", "port to listen on (0: any free port)",
         [](ServerConfig& c, const std::string& v) {
             c.listen_port = to_int("--listen-port", v, 0, 65535);
         }},
        {"", "--serve-html-path", "<string>", "the built-in page",
         "HTML file to serve at / instead of the built-in web page",
         [](ServerConfig& c, const std::string& v) { c.serve_html_path = v; }},
        {"", "--max-queue-size", "<int>", "64",
         "jobs queued or generating at once; more are answered 429",
         [](ServerConfig& c, const std::string& v) {
             c.max_queue_size = to_int("--max-queue-size", v, 1, 4096);
         }},
        {"", "--job-retention", "<seconds>", "600",
         "how long a finished /sdcpp/v1 job and its images stay readable",
         [](ServerConfig& c, const std::string& v) {
             c.job_retention_seconds = to_int("--job-retention", v, 1, 7 * 24 * 3600);
         }},
        {"", "--max-body-size", "<MiB>", "64", "largest request body accepted",
         [](ServerConfig& c, const std::string& v) {
             c.max_body_bytes = static_cast<size_t>(to_int("--max-body-size", v, 1, 4096)) << 20;
         }},
        {"", "--max-image-size", "<int>", "2048", "largest width or height a request may ask for",
         [](ServerConfig& c, const std::string& v) {
             c.limits.max_side = to_int("--max-image-size", v, 64, 16384);
         }},
        {"", "--max-batch", "<int>", "8", "most images one request may ask for",
         [](ServerConfig& c, const std::string& v) {
             c.limits.max_batch = to_int("--max-batch", v, 1, 64);
         }},
        {"", "--max-steps", "<int>", "150", "most sampling steps one request may ask for",
         [](ServerConfig& c, const std::string& v) {
             c.limits.max_steps = to_int("--max-steps", v, 1, 10000);
         }},
        {"", "--http-threads", "<int>", "max(512, max-queue-size + 64)",
         "most threads answering HTTP connections, made as needed (a synchronous request "
         "holds one while it waits; more connections wait for a thread)",
         [](ServerConfig& c, const std::string& v) {
             c.http_threads = to_int("--http-threads", v, 4, 8192);
         }},
        {"", "--http-read-timeout", "<seconds>", "5",
         "time a client has to send a request's headers, and each part of its body; slower "
         "connections are closed",
         [](ServerConfig& c, const std::string& v) {
             c.http_read_timeout_seconds = to_int("--http-read-timeout", v, 1, 600);
         }},
        {"", "--max-client-connections", "<int>", "64",
         "open connections one client address may hold; more are answered 503 at once",
         [](ServerConfig& c, const std::string& v) {
             c.max_client_connections = to_int("--max-client-connections", v, 1, 100000);
         }},
        {"", "--queue", "<url>", "none (in process)",
         "share a Redis job queue: redis://[user:password@]HOST:PORT[/DB], or rediss://... "
         "over TLS",
         [](ServerConfig& c, const std::string& v) {
             try {
                 parse_redis_url(v);
             } catch (const std::invalid_argument& e) {
                 throw cli::UsageError(std::string("--queue: ") + e.what());
             }
             c.queue_url = v;
         }},
        {"", "--queue-tls-ca", "<file>", "the system's CA store",
         "with --queue rediss://: the CA certificates (PEM) the Redis server's must chain to",
         [](ServerConfig& c, const std::string& v) { c.queue_tls.ca = v; }},
        {"", "--queue-tls-cert", "<file>", "none",
         "with --queue rediss://: a client certificate (PEM), for a server that asks for one",
         [](ServerConfig& c, const std::string& v) { c.queue_tls.cert = v; }},
        {"", "--queue-tls-key", "<file>", "none",
         "with --queue rediss://: the private key (PEM) of --queue-tls-cert",
         [](ServerConfig& c, const std::string& v) { c.queue_tls.key = v; }},
        {"", "--role", "<api|worker|both>", "both",
         "with --queue: take requests (api), run jobs on the model (worker), or both",
         [](ServerConfig& c, const std::string& v) {
             if (v != "api" && v != "worker" && v != "both")
                 throw cli::UsageError("invalid value '" + v +
                                       "' for --role: expected api, worker or both");
             c.role = v;
         }},
        {"", "--queue-visibility-timeout", "<seconds>", "30",
         "with --queue: a job whose worker stopped answering this long goes to another",
         [](ServerConfig& c, const std::string& v) {
             c.queue_visibility_seconds = to_int("--queue-visibility-timeout", v, 2, 24 * 3600);
         }},
    };
    return options;
}

const ServerOption* find_server_option(const std::string& name) {
    for (const ServerOption& o : server_options())
        if (name == o.long_name || (o.short_name[0] && name == o.short_name)) return &o;
    return nullptr;
}

bool refused(const cli::OptionSpec& spec) {
    const auto& only = cli_only_options();
    return std::find(only.begin(), only.end(), spec.long_name) != only.end();
}

// sd-cli options listed with the server's own.
bool program_option(const cli::OptionSpec& spec) {
    return spec.group == cli::Group::Cli && !refused(spec);
}

}  // namespace

const std::vector<std::string>& cli_only_options() {
    static const std::vector<std::string> names = {
        "--canny",        "--convert-name",     "--image",           "--imat-in",      "--imat-out",
        "--metadata-all", "--metadata-brief",   "--metadata-format", "--metadata-raw", "--mode",
        "--output",       "--output-begin-idx", "--preview-path"};
    return names;
}

void parse_server_command_line(int argc, const char* const* argv, ServerConfig& config,
                               cli::CliParams& params) {
    // Server options are applied here; the rest go through sd-cli's parser in one pass.
    std::vector<std::string> passed = {argv[0]};
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        std::string name = arg, value;
        bool inline_value = false;
        const size_t eq = arg.find('=');
        if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
            name = arg.substr(0, eq);
            value = arg.substr(eq + 1);
            inline_value = true;
        }
        if (const ServerOption* option = find_server_option(name)) {
            if (!inline_value) {
                if (i + 1 >= argc)
                    throw cli::UsageError(std::string(option->long_name) + " needs a value");
                value = argv[++i];
            }
            option->apply(config, value);
            continue;
        }
        const cli::OptionSpec* spec = cli::find_option(name);
        if (!spec)
            throw cli::UsageError("unknown argument: " + arg + " (sd-server -h lists the options)");
        if (refused(*spec))
            throw cli::UsageError(cli::option_label(*spec) +
                                  " is an sd-cli option; sd-server does not take it");
        passed.push_back(arg);
        if (spec->arg != cli::Arg::None && !inline_value) {
            if (i + 1 >= argc) throw cli::UsageError(cli::option_label(*spec) + " needs a value");
            passed.push_back(argv[++i]);
        }
    }
    std::vector<const char*> args;
    for (const std::string& a : passed) args.push_back(a.c_str());
    cli::parse_command_line(static_cast<int>(args.size()), args.data(), params);
    config.verbose = params.verbose;
    config.color = params.color;
    config.help = params.help;
}

void check_server_config(const ServerConfig& config) {
    if (config.limits.min_side > config.limits.max_side)
        throw cli::UsageError("--max-image-size must be at least " +
                              std::to_string(config.limits.min_side));
    if (config.queue_url.empty() && config.role != "both")
        throw cli::UsageError("--role " + config.role + " needs --queue redis://HOST:PORT");
    const RedisTlsFiles& tls = config.queue_tls;
    if (!tls.ca.empty() || !tls.cert.empty() || !tls.key.empty()) {
        const char* given = !tls.ca.empty()     ? "--queue-tls-ca"
                            : !tls.cert.empty() ? "--queue-tls-cert"
                                                : "--queue-tls-key";
        if (config.queue_url.rfind("rediss://", 0) != 0)
            throw cli::UsageError(std::string(given) + " needs --queue rediss://HOST:PORT (TLS)");
        if (tls.cert.empty() != tls.key.empty())
            throw cli::UsageError(tls.cert.empty() ? "--queue-tls-key needs --queue-tls-cert"
                                                   : "--queue-tls-cert needs --queue-tls-key");
    }
}

void print_server_help(std::ostream& out, const std::string& program) {
    constexpr size_t kNamesWidth = 40;
    const size_t width = cli::help_width();
    const auto row = [&](const std::string& names, const std::string& help) {
        cli::print_help_row(out, names, help, kNamesWidth, width);
    };
    out << "usage: " << program << " [options]\n\nSvr Options:\n";
    for (const ServerOption& o : server_options()) {
        std::string names = o.short_name[0] ? std::string(o.short_name) + ", " + o.long_name
                                            : std::string(o.long_name);
        if (o.value_hint[0]) names += std::string(" ") + o.value_hint;
        row(names, std::string(o.help) + " (default: " + o.default_text + ")");
    }
    for (const cli::OptionSpec& spec : cli::option_table())
        if (program_option(spec)) row(cli::names_column(spec), cli::help_column(spec));
    const std::pair<cli::Group, const char*> groups[] = {
        {cli::Group::Context, "Context Options"},
        {cli::Group::Generation, "Default Generation Options"}};
    for (const auto& [group, title] : groups) {
        out << "\n" << title << ":\n";
        for (const cli::OptionSpec& spec : cli::option_table())
            if (spec.group == group) row(cli::names_column(spec), cli::help_column(spec));
    }
}

}  // namespace server
