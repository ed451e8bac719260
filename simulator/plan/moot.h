// Switches with no effect in a plan's combination (Megatron-LM accepts them; they do nothing
// there): found, reported and turned off in one rule list.
#pragma once
#include <string>
#include <vector>
#include "inputs/mode.h"
#include "inputs/model_config.h"
#include "inputs/strategy_config.h"

namespace trainsim {

/// A switch that cannot act in the plan's combination: Megatron-LM accepts it and it does
/// nothing there (overlap_grad_reduce without data parallelism, tp_comm_overlap with tp 1, an fp8
/// recipe without fp8, ...).
struct NoEffect {
  std::string key;     // strategy key, e.g. "overlap_grad_reduce"
  std::string value;   // the value it had, as JSON text: true, 24, "p2p", ["core_attn"]
  std::string reason;  // why it has no effect, e.g. "changes nothing without data parallelism (...)"
};

/// The switches of `s` that have no effect with this model and these sizes in `mode`, in a
/// fixed order. `model` names the model in reasons. Switches that Megatron-LM rejects in the
/// combination (tp_comm_overlap with tp > 1 but no sequence parallelism, overlap_param_gather
/// without the distributed optimizer, ...) are not moot: validate_plan reports them.
[[nodiscard]] std::vector<NoEffect> moot_switches(const ModelConfig& m, const StrategyConfig& s, Mode mode,
                                                  const std::string& model = "model");

/// Turns off every switch with no effect (back to its reader default), again until none is left
/// so that dependent switches follow (fp8 false drops fp8_recipe and fp8_param_gather; cp_size 1
/// drops a2a+p2p and then its hierarchical sizes), and returns them in the order turned off. The
/// default mode only: compat mode keeps the peer's strict checks and changes nothing.
std::vector<NoEffect> normalize_strategy(const ModelConfig& m, StrategyConfig& s, Mode mode,
                                         const std::string& model = "model");

/// "overlap_grad_reduce=true changes nothing without data parallelism (...); turned off": the
/// warning line (without "warning: ") for one switch turned off.
[[nodiscard]] std::string no_effect_line(const NoEffect& n);

/// One switch with no effect, with validate_plan's message for a strategy not normalized and how
/// to turn it off (back to its reader default, which never counts as moot).
struct MootSwitch {
  NoEffect what;
  std::string message;
  void (*off)(StrategyConfig&);
};
/// Every switch of `s` with no effect, in the rule list's fixed order.
[[nodiscard]] std::vector<MootSwitch> find_moot_switches(const ModelConfig& m, const StrategyConfig& s, Mode mode,
                                                         const std::string& model);

}  // namespace trainsim
