// Human and machine-readable reports of an estimate.
#pragma once

#include <string>

#include "config/model_config.h"
#include "config/strategy_config.h"
#include "config/system_config.h"
#include "estimate/estimate.h"

namespace trainsim {

/// The three inputs of a prediction and where they came from.
struct PlanInputs {
  ModelConfig model;
  StrategyConfig strategy;
  SystemConfig system;
  std::string model_source, strategy_source, system_source;
};

/// One JSON document (schema_version 1.0.0): headline numbers in ms/GiB, per-stage memory and
/// time breakdown, network choice and efficiency misses.
[[nodiscard]] std::string estimate_to_json(const PlanInputs& in, const Estimate& e);

/// The console summary: model, parallelism, time per step, MFU, TFLOPS, tokens/s, memory.
[[nodiscard]] std::string estimate_summary(const PlanInputs& in, const Estimate& e);

/// "tp2.sp.cp1.pp2.dp2.ep1.etp1.edp4" style parallelism string.
[[nodiscard]] std::string parallelism_string(const StrategyConfig& s);

}  // namespace trainsim
