// Human and machine-readable reports of an estimate.
#pragma once

#include <string>
#include <vector>

#include "inputs/model_config.h"
#include "system/system_config.h"
#include "plan/plan.h"
#include "plan/validate.h"
#include "estimate/estimate.h"
#include "estimate/throughput.h"

namespace trainsim {

/// The three inputs of a prediction and where they came from.
struct PlanInputs {
  ModelConfig model;
  SystemConfig system;
  std::string model_source, strategy_source, system_source;
  MfuConvention mfu = MfuConvention::Megatron;  // the convention of the headline MFU
  std::vector<std::string> notes;        // approximations made while reading the inputs
  std::vector<std::string> not_modeled;  // given Megatron-LM flags that matter but are not modeled
  std::vector<std::string> ignored;      // given Megatron-LM flags that cannot change the prediction
  std::vector<NoEffect> no_effect;       // switches with no effect in this plan, turned off
  // From the resolved plan (take_plan): its settings and pipeline split.
  Settings settings;
  std::vector<VirtualStage> stages;
  /// Keeps what the views read of the resolved `plan` of these inputs.
  void take_plan(const Plan& plan) {
    settings = plan;
    stages = plan.virtual_stages();
  }
};

/// One JSON document (schema_version 1.0.0): headline numbers in ms/GiB, parameter counts, MFU in
/// both conventions, per-stage memory and time breakdown, network choice and efficiency misses.
[[nodiscard]] std::string estimate_to_json(const PlanInputs& in, const Estimate& e);

/// The console summary: model and its parameter count, parallelism, time per step and what the
/// straggler factor adds, MFU, TFLOPS, tokens/s, memory, and warnings about what is not modeled.
[[nodiscard]] std::string estimate_summary(const PlanInputs& in, const Estimate& e);


}  // namespace trainsim
