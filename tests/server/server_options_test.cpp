// sd-server's command line: its own options, sd-cli's model and generation options, and
// every option the reference sd-server lists.
#include "server_options.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cli_checks.h"
#include "cli_options.h"
#include "redis_url.h"
#include "test_util.h"

namespace server {
namespace {

void parse(std::vector<const char*> args, ServerConfig& config, cli::CliParams& params) {
    args.insert(args.begin(), "sd-server");
    parse_server_command_line(static_cast<int>(args.size()), args.data(), config, params);
}

TEST(ServerOptions, DefaultsAreTheReferenceServersOnes) {
    ServerConfig config;
    cli::CliParams params;
    parse({"-m", "model.safetensors"}, config, params);
    EXPECT_EQ(config.listen_ip, "127.0.0.1");
    EXPECT_EQ(config.listen_port, 1234);
    EXPECT_EQ(params.model_path, "model.safetensors");
    EXPECT_EQ(params.sample_params.sample_steps, 20);
}

TEST(ServerOptions, ReadsServerAndGenerationOptionsTogether) {
    ServerConfig config;
    cli::CliParams params;
    parse({"-l",
           "0.0.0.0",
           "--listen-port=8080",
           "--serve-html-path",
           "page.html",
           "-m",
           "m",
           "--max-queue-size",
           "3",
           "--job-retention",
           "30",
           "--steps",
           "4",
           "-W",
           "64",
           "--rng",
           "cpu",
           "--max-body-size",
           "2",
           "--max-batch",
           "2",
           "-v"},
          config, params);
    EXPECT_EQ(config.listen_ip, "0.0.0.0");
    EXPECT_EQ(config.listen_port, 8080);
    EXPECT_EQ(config.serve_html_path, "page.html");
    EXPECT_EQ(config.max_queue_size, 3);
    EXPECT_EQ(config.job_retention_seconds, 30);
    EXPECT_EQ(config.max_body_bytes, size_t{2} << 20);
    EXPECT_EQ(config.limits.max_batch, 2);
    EXPECT_TRUE(config.verbose);
    EXPECT_EQ(params.sample_params.sample_steps, 4);
    EXPECT_EQ(params.width, 64);
    EXPECT_EQ(params.rng_type, CPU_RNG);
}

TEST(ServerOptions, RefusesBadValuesAndSdCliOnlyOptions) {
    for (std::vector<const char*> args : {std::vector<const char*>{"--listen-port", "70000"},
                                          {"--listen-port", "x"},
                                          {"--max-queue-size", "0"},
                                          {"-o", "out.png"},
                                          {"-M", "convert"},
                                          {"--preview-path", "p.png"},
                                          {"--no-such-option"},
                                          {"--steps", "many"},
                                          {"--listen-port"}}) {
        ServerConfig config;
        cli::CliParams params;
        EXPECT_THROW(parse(args, config, params), cli::UsageError) << args[0];
    }
}

// rediss:// takes the TLS files; they are refused by name without it, and a certificate
// without its key (or the reverse) is named.
TEST(ServerOptions, QueueTlsFilesNeedRedissAndComeInPairs) {
    ServerConfig config;
    cli::CliParams params;
    parse({"-m", "m.safetensors", "--queue", "rediss://:pw@queue.lan:6380", "--queue-tls-ca",
           "ca.pem", "--queue-tls-cert", "w.pem", "--queue-tls-key", "w.key"},
          config, params);
    EXPECT_NO_THROW(check_server_config(config));
    EXPECT_TRUE(parse_redis_url(config.queue_url).tls);
    EXPECT_EQ(config.queue_tls.ca, "ca.pem");
    EXPECT_EQ(config.queue_tls.cert, "w.pem");
    EXPECT_EQ(config.queue_tls.key, "w.key");

    auto usage_error = [](std::vector<const char*> args) {
        ServerConfig c;
        cli::CliParams p;
        try {
            parse(args, c, p);
            check_server_config(c);
        } catch (const cli::UsageError& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_NE(usage_error({"--queue", "redis://h:1", "--queue-tls-ca", "ca.pem"})
                  .find("--queue-tls-ca needs --queue rediss://"),
              std::string::npos);
    EXPECT_NE(usage_error({"--queue", "rediss://h:1", "--queue-tls-cert", "w.pem"})
                  .find("--queue-tls-cert needs --queue-tls-key"),
              std::string::npos);
    EXPECT_NE(usage_error({"--queue", "rediss://h:1", "--queue-tls-key", "w.key"})
                  .find("--queue-tls-key needs --queue-tls-cert"),
              std::string::npos);
}

// The job status's step previews: proj unless --preview says otherwise.
TEST(ServerOptions, PreviewOptionsChooseTheJobPreviews) {
    ServerConfig config;
    cli::CliParams params;
    parse({"-m", "m.safetensors", "--preview", "vae", "--preview-interval", "3", "--preview-noisy"},
          config, params);
    EXPECT_EQ(params.preview_method, PREVIEW_VAE);
    EXPECT_EQ(params.preview_interval, 3);
    EXPECT_TRUE(params.preview_noisy);
    EXPECT_TRUE(params.was_given("--preview"));
    cli::CliParams tae;
    parse({"-m", "m.safetensors", "--preview", "tae"}, config, tae);
    EXPECT_THROW(cli::check_params(tae), cli::UsageError);  // needs --taesd
}

TEST(ServerOptions, AcceptsEveryOptionTheReferenceServerLists) {
    std::ifstream in(sd::test::fixtures_dir() + "/cli/sd-server-flags.txt");
    ASSERT_TRUE(in) << "sd-server-flags.txt";
    std::stringstream help;
    print_server_help(help, "sd-server");
    int checked = 0;
    for (std::string flag; std::getline(in, flag);) {
        if (flag.empty()) continue;
        const cli::OptionSpec* spec = cli::find_option(flag);
        const auto& only = cli_only_options();
        const bool server_own = flag == "-l" || flag == "--listen-ip" || flag == "--listen-port" ||
                                flag == "--serve-html-path";
        EXPECT_TRUE(server_own || spec) << flag;
        if (spec) {
            EXPECT_EQ(std::count(only.begin(), only.end(), spec->long_name), 0) << flag;
        }
        EXPECT_NE(help.str().find(flag), std::string::npos) << flag << " missing from -h";
        ++checked;
    }
    EXPECT_GT(checked, 150);
}

// -h wraps to the terminal ($COLUMNS when stdout is not one), as sd-cli's.
TEST(ServerOptions, HelpWrapsToTheTerminalWidth) {
    ::setenv("COLUMNS", "80", 1);
    std::stringstream help;
    print_server_help(help, "sd-server");
    ::unsetenv("COLUMNS");
    int lines = 0;
    for (std::string line; std::getline(help, line); ++lines) {
        const bool one_word = line.find(' ', line.find_first_not_of(' ')) == std::string::npos;
        if (!one_word) {
            EXPECT_LE(line.size(), 80u) << line;
        }
    }
    EXPECT_GT(lines, 200);
}

}  // namespace
}  // namespace server
