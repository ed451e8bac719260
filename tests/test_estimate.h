// Tests that start from a strategy: resolve the plan and estimate it in one call (the library's
// callers resolve a Plan first; the strategy is read by plan/ alone).
#pragma once

#include "test_estimate.h"
#include "estimate/estimate.h"
#include "inputs/strategy_config.h"
#include "model/parameter_count.h"
#include "plan/pipeline_layout.h"
#include "plan/plan.h"
#include "views/report.h"

namespace trainsim {

/// resolve_plan + estimate. Throws ConfigError when the plan is illegal.
[[nodiscard]] inline Estimate estimate(const ModelConfig& m, const StrategyConfig& s, const SystemConfig& sys,
                                       EstimateCache* cache = nullptr, Mode mode = Mode::Default, bool events = true) {
  Plan plan = resolve_plan(m, s, sys, mode);
  if (cache != nullptr) key_chunks(plan, s);
  return estimate(plan, cache, events);
}

/// The parameters of `m` over the pipeline split `s` asks for (Megatron's, MTP layers on the last
/// stage unless a layout places them); totals only when the split is illegal.
[[nodiscard]] inline ParameterCount count_parameters(const ModelConfig& m, const StrategyConfig& s) {
  std::vector<VirtualStage> stages;
  if (!pipeline_stages(m, s, stages, nullptr, nullptr)) return count_parameters(m, {}, 1);
  if (!s.pipeline_model_parallel_layout) stages.back().mtp_layers = m.mtp_num_layers;
  return count_parameters(m, stages, s.pp_size);
}

/// A view's inputs built in a test, with the strategy they came from (the views read the
/// resolved plan's settings: call take_plan).
struct StrategyInputs : PlanInputs {
  StrategyConfig strategy;
};

}  // namespace trainsim
