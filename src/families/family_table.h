// The supported-families table, made from the registry so it cannot go stale: `sd-cli
// --list-families` prints it, and the README carries it (a test keeps the two equal).
#pragma once

#include <string>

namespace sd {

// A Markdown table: each family of the registry, whether this build runs it, the files it
// takes (by sd-cli option; optional ones in brackets) and its default sampler / scheduler.
std::string family_table_markdown();

}  // namespace sd
