// The options that describe a plan, the same on perf, search, shapes and import: --model,
// --hf-config, --strategy, --megatron-args, --set and the shortcuts (--tp, --gbs, ...).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "inputs/plan_request.h"

namespace trainsim::cli {

using PlanOptions = PlanArgs;

struct PlanOptionSet {
  bool strategy_repeatable = false;
  bool shortcuts = true;  // search has its own --tp/--pp/... candidate lists
};

/// Declares the plan options on `app`, bound to `o` (which must outlive the parse).
void add_plan_options(CLI::App& app, PlanOptions& o, PlanOptionSet which = {});

/// Prints the notes and the not-modeled flags of a plan to stderr (for commands without a summary).
void warn_about(const PlanConfigs& p, const std::string& command);

}  // namespace trainsim::cli
