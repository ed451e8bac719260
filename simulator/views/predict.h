// One prediction from user inputs: what `trainsim perf` and the web app's API both run, so that
// they return the same document for the same inputs.
#pragma once

#include "inputs/mode.h"
#include "inputs/plan_request.h"
#include "system/presets.h"
#include "views/report.h"

namespace trainsim {

// The plan `trainsim perf` runs without arguments (and `make run`, the web app, the Python module).
inline constexpr const char* kDefaultModel = "llama3-8b";
inline constexpr const char* kDefaultStrategy = "tp2-pp2-dp2-zero1";
inline constexpr const char* kDefaultSystem = "h100-sxm-80g";

struct Prediction {
  PlanInputs in;
  Estimate estimate;
};

/// Builds the plan (defaults: `default_model`, `default_strategy` preset names; "" = required),
/// loads `system`, resolves and estimates with every op event. Throws ConfigError / UsageError on
/// bad input and Error when a result is not finite.
[[nodiscard]] Prediction predict(const PlanRequest& request, const std::string& default_model,
                                 const std::string& default_strategy, const ConfigText& system,
                                 MfuConvention mfu, Mode mode);

}  // namespace trainsim
