// What a user gives to describe a plan — model / strategy files or presets, a Hugging Face
// config, a Megatron-LM command line, overrides — combined into the model and strategy the
// simulator reads, with the same checks as the files.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "inputs/hf_config.h"
#include "inputs/mode.h"
#include "inputs/model_config.h"
#include "system/presets.h"
#include "inputs/strategy_config.h"
#include "plan/validate.h"

namespace trainsim {

/// One override: a model or strategy key (or `dp_size` / `global_batch_size`, which set
/// world_size and micro_batch_num) and its value as typed: JSON (2, true, "x", [..]) or a bare
/// string. `origin` names the flag in messages ("--tp 4", "--set zero_state=1").
struct Override {
  std::string key;
  std::string value;
  std::string origin;
};

/// A `--set` key that names a value of the system document by its path ("accelerator.mem_gbs"):
/// model and strategy keys have no dot.
[[nodiscard]] bool is_system_key(const std::string& key);

/// The system document with the `--set` overrides of system keys applied (each path must exist
/// in it; its value replaced, typed as the other overrides); the document itself when none.
[[nodiscard]] ConfigText apply_system_overrides(const ConfigText& system, const std::vector<Override>& overrides);

struct PlanRequest {
  std::optional<ConfigText> model;     // model JSON
  std::optional<ConfigText> hf_config; // Hugging Face config.json
  HfOptions hf;
  std::optional<ConfigText> strategy;  // strategy JSON
  std::optional<ConfigText> megatron;  // Megatron-LM command line
  std::vector<Override> overrides;     // applied in order, after the files
  Mode mode = Mode::Default;           // compat: Megatron's CP / MoE dispatch switches stay warnings
  /// Turn off the strategy's switches that have no effect (normalize_strategy). search keeps
  /// them: each candidate has its own sizes and is normalized on its own.
  bool normalize = true;
};

struct PlanConfigs {
  ModelConfig model;
  StrategyConfig strategy;
  std::string model_source, strategy_source;
  std::vector<std::string> notes, not_modeled, ignored;
  std::vector<NoEffect> no_effect;  // switches turned off (normalize_strategy)
};

/// The shortcut options (`--tp`, `--vpp`, `--gbs`, ...) and the key each sets, in help order.
struct Shortcut {
  const char* option;  // without dashes
  const char* key;
  const char* help;
};
[[nodiscard]] const std::vector<Shortcut>& override_shortcuts();

/// Parses "key=value" (from --set) into an Override; a missing '=' or an unknown key is a
/// UsageError with a suggestion.
[[nodiscard]] Override parse_set_option(const std::string& text);

/// The plan inputs as given on a command line (or to the Python module): preset names or file
/// paths ("-" = stdin), `--set` texts and shortcut values.
struct PlanArgs {
  std::string model, hf_config, megatron_args;
  std::vector<std::string> strategies;  // one, or several where the command allows it
  bool mtp = false;
  std::vector<std::string> sets;
  std::vector<std::string> shortcut_values;  // parallel to override_shortcuts(); "" = not given
};

/// Reads the given files (or stdin for "-") and resolves presets; `strategy_index` picks one of
/// several strategies.
[[nodiscard]] PlanRequest make_request(const PlanArgs& o, size_t strategy_index = 0);

/// Builds the plan. Model: `model`, `hf_config` or the Megatron model flags (a Megatron model
/// flag that disagrees with the model file is an error); strategy: `strategy` or `megatron`.
/// Whichever is absent falls back to the given default preset names (empty = required).
/// Switches with no effect in the result are turned off and listed in `no_effect`.
[[nodiscard]] PlanConfigs build_plan(const PlanRequest& request, const std::string& default_model,
                                     const std::string& default_strategy);

}  // namespace trainsim
