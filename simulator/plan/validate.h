// Cross-file legality rules of a (model, strategy, system) plan.
#pragma once

#include <string>
#include <vector>

#include "inputs/mode.h"
#include "inputs/model_config.h"
#include "inputs/strategy_config.h"
#include "system/system_config.h"
#include "core/error.h"

namespace trainsim {

/// Names of the three inputs, used in messages (file paths or preset names).
struct PlanSources {
  std::string model = "model";
  std::string strategy = "strategy";
  std::string system = "system";
};

/// Limits on sizes that multiply the simulator's work and memory, checked by validate_plan before
/// anything is allocated (the readers already cap each size on its own).
/// Pipeline replay slots: pp_size × interleaving_size × micro_batch_num (replay keeps a few
/// hundred bytes per slot; 2^20 slots is ~0.2 GB and far above real runs, e.g. pp 32 × vpp 4 × 4096).
inline constexpr int64_t kMaxPipelineSlots = int64_t{1} << 20;
/// Layer-expert pairs: layer_num × expert_num (per-layer, per-expert tables).
inline constexpr int64_t kMaxLayerExperts = int64_t{1} << 24;

/// Every rule the plan breaks in `mode` (world size factoring, head/expert/sequence
/// divisibility, pipeline split, schedule, recompute and VPP combinations, missing system
/// entries). Empty when legal. resolve_plan (plan/plan.h) adds the schedule's pairing rule.
/// A switch with no effect (moot_switches) is an issue here: inputs from users go through
/// normalize_strategy first, which turns such switches off.
[[nodiscard]] std::vector<Issue> validate_plan(const ModelConfig& m, const StrategyConfig& s,
                                               const SystemConfig& sys, const PlanSources& src,
                                               Mode mode = Mode::Default);

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

/// Divisors of n, as strings, for "valid values" lists.
[[nodiscard]] std::vector<std::string> divisors_of(int64_t n);

/// Layers of the first / middle / last pipeline stage (Megatron `get_num_layers_to_build`).
struct StageLayers {
  int64_t first = 0, middle = 0, last = 0;
};
/// Returns false (and a reason) when the layer split is illegal.
[[nodiscard]] bool split_layers(int64_t layers, const StrategyConfig& s, StageLayers& out,
                                std::string* reason);

}  // namespace trainsim
