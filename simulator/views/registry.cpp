// The views of one prediction (see registry.h).
#include "views/registry.h"

#include <array>
#include <vector>

#include "core/enum_table.h"
#include "core/error.h"
#include "views/html_report.h"
#include "views/memory_csv.h"

namespace trainsim {
namespace {

std::string summary(const PlanInputs& in, const Estimate& e, const ViewOptions& o) {
  return estimate_summary(in, e) + (o.level ? breakdown_table(e, *o.level) : "");
}

std::string json(const PlanInputs& in, const Estimate& e, const ViewOptions&) { return estimate_to_json(in, e); }

std::string html(const PlanInputs& in, const Estimate& e, const ViewOptions&) { return perf_html(in, e); }

std::string report(const PlanInputs& in, const Estimate& e, const ViewOptions&) { return perf_report_section(in, e); }

std::string trace(const PlanInputs&, const Estimate& e, const ViewOptions& o) {
  return trace_json(e, {o.trace_detail}, o.trace_stats);
}

std::string memory_timeline(const PlanInputs&, const Estimate& e, const ViewOptions& o) {
  return memory_timeline_csv(e, o.trace_detail);
}

std::string breakdown(const PlanInputs&, const Estimate& e, const ViewOptions& o) {
  if (!o.level) throw UsageError("the breakdown_csv view needs a level: layer or op");
  return breakdown_csv(e, *o.level);
}

constexpr std::array<View, 7> kViews{{
    {"summary", "text/plain; charset=utf-8", "the console summary (with the breakdown table when a level is given)",
     summary},
    {"json", "application/json", "one JSON document: headline figures, per-stage time and memory, fit, breakdown",
     json},
    {"html", "text/html; charset=utf-8", "a self-contained HTML report", html},
    {"report", "text/html; charset=utf-8", "the HTML report's section (the web app embeds it)", report},
    {"trace", "application/json", "the step as a Chrome trace (Perfetto, chrome://tracing)", trace},
    {"memory_timeline", "text/csv", "allocated memory per rank over the step", memory_timeline},
    {"breakdown_csv", "text/csv", "time by layer type or by op per stage, one row per stage and item", breakdown},
}};

}  // namespace

std::span<const View> views() { return kViews; }

const View& view(std::string_view name) {
  for (const View& v : kViews)
    if (v.name == name) return v;
  std::vector<std::string> names;
  for (const View& v : kViews) names.emplace_back(v.name);
  throw UsageError(unknown_name_message("view", name, names));
}

}  // namespace trainsim
