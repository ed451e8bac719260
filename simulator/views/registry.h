// Every view of one prediction in one table: its name, what it renders, its media type and the
// function that renders it from the resolved plan's inputs and the Estimate. `trainsim perf`
// (its output flags) and the web API (GET/POST /api/view/<name>, /api/perf, /api/report) read
// this table; a new view is one row here and its function.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "estimate/estimate.h"
#include "views/breakdown.h"
#include "views/report.h"
#include "views/trace.h"

namespace trainsim {

/// What a view may be asked for beyond the prediction.
struct ViewOptions {
  std::optional<BreakdownLevel> level;  // summary: append the breakdown; breakdown_csv: required
  int64_t trace_detail = TraceOptions{}.detail_micro_batches;  // trace, memory_timeline
  TraceStats* trace_stats = nullptr;    // trace: filled when given
};

struct View {
  std::string_view name;        // "summary", "json", "html", "report", "trace", ...
  std::string_view media_type;  // what the web API answers with
  std::string_view what;        // one line (help, docs/views.md)
  std::string (*render)(const PlanInputs& in, const Estimate& e, const ViewOptions& o);
};

/// The views, in the order the docs list them.
[[nodiscard]] std::span<const View> views();
/// The view named `name`; throws UsageError naming the valid names (did-you-mean) otherwise.
[[nodiscard]] const View& view(std::string_view name);

}  // namespace trainsim
