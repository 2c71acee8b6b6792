// The command line: one table holding every option of the reference sd-cli (names, value
// type, default, help), the parser that applies it to CliParams, and -h.
#pragma once

#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli_params.h"

namespace cli {

// A bad command line: the message names the option and the value.
class UsageError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

enum class Group { Cli, Context, Generation };
enum class Arg { None, String, Int, Float, Choice };

struct OptionSpec {
    std::string short_name;  // "-W", or empty
    std::string long_name;   // "--width"
    Group group = Group::Cli;
    Arg arg = Arg::None;
    std::string value_hint;    // "<int>", "{euler, euler_a, ...}"
    std::string default_text;  // shown as "(default: ...)"
    std::string help;
    std::function<void(CliParams&, const std::string& value)> apply;
    // Non-empty for a feature this build does not have: the option is accepted and the run
    // is refused with this text.
    std::string not_built;
};

const std::vector<OptionSpec>& option_table();
// The option called `name` (short or long form), or nullptr.
const OptionSpec* find_option(const std::string& name);
// "-W/--width" or "--steps", for messages.
std::string option_label(const OptionSpec& spec);

// Applies argv[1..] to `params` (which starts at its defaults). Throws UsageError.
void parse_command_line(int argc, const char* const* argv, CliParams& params);

// -h's two columns for one option: "-W, --width <int>" and its help with the default.
std::string names_column(const OptionSpec& spec);
std::string help_column(const OptionSpec& spec);

// Every option with its value type, help line and default, wrapped to the terminal.
void print_help(std::ostream& out, const std::string& program);

}  // namespace cli
