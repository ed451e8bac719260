// Cross-file legality rules of a (model, strategy, system) plan.
#pragma once

#include <string>
#include <vector>

#include "inputs/mode.h"
#include "inputs/model_config.h"
#include "inputs/strategy_config.h"
#include "system/system_config.h"
#include "plan/moot.h"
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
