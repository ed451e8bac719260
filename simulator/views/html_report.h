// Self-contained HTML reports (no network, no scripts): headline numbers and SVG plots drawn here
// from the estimate's timeline, stage times, memory and op breakdown, or a search's candidates.
#pragma once

#include <string>

#include "views/report.h"
#include "search/search.h"

namespace trainsim {

/// The report body of one prediction (a <section> with the headline numbers, time per stage,
/// memory per stage, the pipeline Gantt and the top ops): the perf page and the web app show it.
[[nodiscard]] std::string perf_report_section(const PlanInputs& in, const Estimate& e);

/// A whole page around perf_report_section.
[[nodiscard]] std::string perf_html(const PlanInputs& in, const Estimate& e);

/// The search body: counts, step time vs peak memory of every feasible candidate kept, with the
/// Pareto front (no other candidate both faster and smaller), and the best candidates.
[[nodiscard]] std::string search_report_section(const SearchResult& r, const std::string& title);
[[nodiscard]] std::string search_html(const SearchResult& r, const std::string& title);

/// Indices of the Pareto-optimal candidates (minimal time and memory), by increasing time.
[[nodiscard]] std::vector<size_t> pareto_front(const std::vector<Candidate>& c);

/// `text` escaped for HTML and SVG text and attributes.
[[nodiscard]] std::string html_escape(const std::string& text);

}  // namespace trainsim
