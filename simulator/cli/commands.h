// Subcommands of the `trainsim` CLI. Each returns the process exit code; input errors are
// thrown (trainsim::Error) and reported by main.
#pragma once

#include <string>
#include <vector>

#include "cli/cli_app.h"
#include "inputs/mode.h"

namespace trainsim::cli {

using Args = std::vector<std::string>;

int cmd_perf(const Args& args);      // predict one plan
int cmd_batch(const Args& args);     // evaluate a directory of cases into a CSV
int cmd_search(const Args& args);    // rank strategies
int cmd_validate(const Args& args);  // accuracy suite against real measurements
int cmd_shapes(const Args& args);    // list efficiency-table keys a plan looks up
int cmd_system(const Args& args);    // `system build`: merge measurements into a system file
int cmd_presets(const Args& args);   // list embedded presets
int cmd_import(const Args& args);    // Hugging Face config / Megatron command line → JSON files
int cmd_serve(const Args& args);     // local web app and JSON API
int cmd_sweep(const Args& args);     // one plan over the values of one or two keys

/// Declares --compat on a subcommand, storing its value in `value`; compat_mode turns it into
/// the mode.
void add_compat_option(CLI::App& app, std::string& value);

}  // namespace trainsim::cli
