// Command-line parsing for every trainsim subcommand and the benches, on CLI11: one way to spell
// options, `-h`/`--help`, and usage errors that name the command and suggest a correction.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace trainsim::cli {

/// Parses `args` (the words after the command name) into `app`. Returns false when `-h`/`--help`
/// printed the help to stdout. An unknown option (with a "did you mean" when one is close), an
/// unexpected argument, a missing value or a value CLI11 rejects is a UsageError naming `command`.
[[nodiscard]] bool parse_args(CLI::App& app, const std::string& command, const std::vector<std::string>& args);

}  // namespace trainsim::cli
