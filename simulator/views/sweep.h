// `trainsim sweep`: one plan predicted over the values of one or two keys (model, strategy or
// system keys, as `--set` takes them), as a table, a CSV and an HTML chart (a line for one key,
// a heat map for two).
#pragma once

#include <string>
#include <vector>

#include "inputs/mode.h"
#include "inputs/plan_request.h"
#include "system/presets.h"

namespace trainsim {

/// A key and the values it takes, from "KEY=V1,V2,...".
struct SweepAxis {
  std::string key;
  std::vector<std::string> values;
};

/// "KEY=V1,V2,..." → the axis; the key is checked as `--set` checks it. UsageError otherwise.
[[nodiscard]] SweepAxis parse_sweep_axis(const std::string& text);

/// One combination of the axes' values and its prediction, or why it could not be predicted.
struct SweepPoint {
  std::vector<std::string> values;  // one per axis
  std::string error;                // empty when predicted
  double step_ms = 0, mfu = 0, peak_reserved_gib = 0, headroom_gib = 0;
  bool fits = true;   // FITS or TIGHT (estimate/fit.h)
  bool tight = false;  // fits only if the caching allocator releases its cache
};

/// Predicts `base` (with the defaults perf uses) at every combination of the axes' values, the
/// first axis outermost; a combination that is no valid plan is a point with its error.
[[nodiscard]] std::vector<SweepPoint> run_sweep(const PlanRequest& base, const std::string& default_model,
                                                const std::string& default_strategy, const ConfigText& system,
                                                Mode mode, const std::vector<SweepAxis>& axes);

/// A header (the keys, step_time_ms, mfu, peak_reserved_gib, headroom_gib, fits, fit_state, error), one row a point.
[[nodiscard]] std::string sweep_csv(const std::vector<SweepAxis>& axes, const std::vector<SweepPoint>& points);

/// The table the command prints.
[[nodiscard]] std::string sweep_table(const std::vector<SweepAxis>& axes, const std::vector<SweepPoint>& points);

/// A self-contained HTML page: step time along the axis (one key) or as a heat map (two keys).
[[nodiscard]] std::string sweep_html(const std::vector<SweepAxis>& axes, const std::vector<SweepPoint>& points,
                                     const std::string& title);

}  // namespace trainsim
