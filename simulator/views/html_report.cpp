// HTML + SVG reports. Every number drawn is read from the Estimate (or SearchResult); the plots
// are plain SVG written here, so the page needs no scripts and no network.
#include "views/html_report.h"

#include <algorithm>
#include <map>

#include "core/text.h"
#include "core/units.h"
#include "plan/validate.h"
#include "estimate/fit.h"
#include "model/graph.h"
#include "views/axis.h"
#include "views/breakdown.h"

namespace trainsim {

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

constexpr double kWidth = 960, kLabel = 150, kPlot = 690;  // room for the total after a bar
constexpr const char* kPalette[] = {"#4e79a7", "#59a14f", "#8cd17d", "#f28e2b", "#ffbe7d", "#e15759", "#b07aa1",
                                    "#76b7b2", "#edc948", "#9c755f", "#bab0ac", "#ff9da7", "#d37295", "#86bcb6"};
const char* color(size_t i) { return kPalette[i % (sizeof kPalette / sizeof kPalette[0])]; }

std::string num(double v) { return strprintf("%.1f", v); }

struct Series {
  std::string name;
  std::vector<double> values;  // one per category
};

// One legend entry (a swatch and its name) at (x, y).
std::string legend_entry(double x, double y, const std::string& fill, const std::string& name, bool line = false,
                         bool dashed = true) {
  std::string o = "<g class=\"legend\">";
  if (line)
    o += "<line x1=\"" + num(x) + "\" y1=\"" + num(y + 6) + "\" x2=\"" + num(x + 12) + "\" y2=\"" + num(y + 6) +
         "\" stroke=\"" + fill + "\" stroke-width=\"2\"" + (dashed ? " stroke-dasharray=\"4 2\"" : "") + "/>";
  else
    o += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"12\" height=\"12\" fill=\"" + fill + "\"/>";
  return o + "<text x=\"" + num(x + 16) + "\" y=\"" + num(y + 11) + "\">" + html_escape(name) + "</text></g>";
}

// Width a legend entry takes: swatch, gap, its text (about 7 px per character of 12 px text).
double legend_width(const std::string& name) { return 16 + 7 * static_cast<double>(name.size()) + 24; }

// Rows the flowing legend of `names` takes in the plot's width.
size_t legend_rows(const std::vector<std::string>& names) {
  size_t rows = names.empty() ? 0 : 1;
  double x = 0;
  for (const auto& n : names) {
    const double w = legend_width(n);
    if (x > 0 && x + w > kWidth) {
      ++rows;
      x = 0;
    }
    x += w;
  }
  return rows;
}

// A horizontal axis at `y` from x0 (value t.lo) to x0 + width (t.hi), with its ticks and the unit.
std::string x_axis(const Ticks& t, double x0, double width, double y, const std::string& unit) {
  std::string o = "<g class=\"axis\"><line x1=\"" + num(x0) + "\" y1=\"" + num(y) + "\" x2=\"" + num(x0 + width) +
                  "\" y2=\"" + num(y) + "\" stroke=\"#666\"/>";
  for (double v : t.values) {
    const double x = x0 + (v - t.lo) / (t.hi - t.lo) * width;
    o += "<line x1=\"" + num(x) + "\" y1=\"" + num(y) + "\" x2=\"" + num(x) + "\" y2=\"" + num(y + 4) +
         "\" stroke=\"#666\"/><text class=\"tick\" x=\"" + num(x) + "\" y=\"" + num(y + 18) +
         "\" text-anchor=\"middle\">" + tick_label(t, v) + "</text>";
  }
  // The unit after the last tick's label (centred on the axis's end: half a label further).
  const double half_label = 3.5 * static_cast<double>(tick_label(t, t.hi).size());
  o += "<text class=\"unit\" x=\"" + num(x0 + width + half_label + 6) + "\" y=\"" + num(y + 18) + "\">" +
       html_escape(unit) + "</text>";
  return o + "</g>";
}

// A vertical marker per row (or one across all rows when equal): a limit bars are compared with.
struct RowLimits {
  std::vector<double> values;  // one per category, in the bars' unit (0: none)
  std::string name;            // "memory limit"
  std::string note;            // what the limit is, after its value
};

// Horizontal stacked bars, one per category, an x axis with round ticks, a legend of the series
// drawn, and optional limit markers (`limits`) and a reference line (`reference` at its value).
std::string stacked_bars(const std::string& id, const std::string& title, const std::vector<std::string>& categories,
                         const std::vector<Series>& series, const std::string& unit, const RowLimits& limits = {},
                         double reference = 0, const std::string& reference_name = "") {
  double max_total = std::max(reference, 0.0);
  for (double l : limits.values) max_total = std::max(max_total, l);
  for (size_t c = 0; c < categories.size(); ++c) {
    double t = 0;
    for (const auto& s : series) t += std::max(0.0, s.values[c]);
    max_total = std::max(max_total, t);
  }
  const Ticks ticks = nice_ticks(0, max_total > 0 ? max_total : 1);
  const double row = 30, top = 30;
  const bool any_limit = std::any_of(limits.values.begin(), limits.values.end(), [](double v) { return v > 0; });
  std::vector<std::string> names;
  for (const auto& s : series)
    if (std::any_of(s.values.begin(), s.values.end(), [](double v) { return v > 0; })) names.push_back(s.name);
  if (any_limit) names.push_back(limits.name + limits.note);
  if (reference > 0) names.push_back(reference_name + " " + strprintf("%.1f", reference) + " " + unit);
  const double bottom = top + row * static_cast<double>(categories.size());
  const double legend_top = bottom + 34;
  const double height = legend_top + 20 * static_cast<double>(legend_rows(names)) + 10;
  std::string o = "<svg id=\"" + id + "\" class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(kWidth) +
                  "\" height=\"" + num(height) + "\" viewBox=\"0 0 " + num(kWidth) + " " + num(height) +
                  "\" role=\"img\"><title>" + html_escape(title) + "</title>";
  o += "<text x=\"0\" y=\"18\" class=\"t\">" + html_escape(title) + "</text>";
  const double scale = kPlot / ticks.hi;
  for (size_t c = 0; c < categories.size(); ++c) {
    const double y = top + row * static_cast<double>(c);
    o += "<text class=\"category\" x=\"0\" y=\"" + num(y + 18) + "\">" + html_escape(categories[c]) + "</text>";
    double x = kLabel, total = 0;
    for (size_t s = 0; s < series.size(); ++s) {
      const double v = series[s].values[c];
      if (v <= 0) continue;
      total += v;
      o += "<rect x=\"" + num(x) + "\" y=\"" + num(y + 4) + "\" width=\"" + strprintf("%.2f", v * scale) +
           "\" height=\"" + num(row - 8) + "\" fill=\"" + color(s) + "\"><title>" + html_escape(categories[c]) + ": " +
           html_escape(series[s].name) + " " + strprintf("%.2f", v) + " " + unit + "</title></rect>";
      x += v * scale;
    }
    double label_x = x + 4;
    if (c < limits.values.size() && limits.values[c] > 0) {
      const double lx = kLabel + limits.values[c] * scale;
      o += "<line class=\"limit\" x1=\"" + num(lx) + "\" y1=\"" + num(y + 1) + "\" x2=\"" + num(lx) + "\" y2=\"" +
           num(y + row - 1) + "\" stroke=\"#d00\" stroke-width=\"2\" stroke-dasharray=\"4 2\"><title>" +
           html_escape(categories[c] + ": " + limits.name) + " " + strprintf("%.2f", limits.values[c]) + " " + unit +
           "</title></line>";
      label_x = std::max(label_x, lx + 4);
    }
    o += "<text class=\"total\" x=\"" + num(label_x) + "\" y=\"" + num(y + 18) + "\">" + strprintf("%.1f", total) + " " +
         unit + "</text>";
  }
  if (reference > 0) {
    const double x = kLabel + reference * scale;
    o += "<line class=\"reference\" x1=\"" + num(x) + "\" y1=\"" + num(top) + "\" x2=\"" + num(x) + "\" y2=\"" +
         num(bottom) + "\" stroke=\"#888\" stroke-width=\"1\"><title>" + html_escape(reference_name) + " " +
         strprintf("%.1f", reference) + " " + unit + "</title></line>";
  }
  o += x_axis(ticks, kLabel, kPlot, bottom + 2, unit);
  // Legend entries flow left to right and wrap (about 7 px per character of 12 px text).
  double lx = 0, ly = legend_top;
  auto next = [&](const std::string& name) {
    const double w = legend_width(name);
    if (lx > 0 && lx + w > kWidth) {
      lx = 0;
      ly += 20;
    }
    const std::pair<double, double> at{lx, ly};
    lx += w;
    return at;
  };
  for (size_t s = 0; s < series.size(); ++s) {
    if (std::none_of(series[s].values.begin(), series[s].values.end(), [](double v) { return v > 0; })) continue;
    const auto [x, y] = next(series[s].name);
    o += legend_entry(x, y, color(s), series[s].name);
  }
  if (any_limit) {
    const std::string name = limits.name + limits.note;
    const auto [x, y] = next(name);
    o += legend_entry(x, y, "#d00", name, true);
  }
  if (reference > 0) {
    const std::string name = reference_name + " " + strprintf("%.1f", reference) + " " + unit;
    const auto [x, y] = next(name);
    o += legend_entry(x, y, "#888", name, true, false);
  }
  return o + "</svg>\n";
}

// Time per reported stage: the parts add up to the stage's total step time.
std::string time_plot(const Estimate& e) {
  std::vector<std::string> cats;
  std::vector<Series> s = {{"forward", {}}, {"backward", {}}, {"recompute", {}}};
  for (Group g : kChunkGroups) s.push_back({std::string(group_name(g)) + " comm (exposed)", {}});
  s.push_back({"pp p2p (blocking, incl. wait)", {}});
  s.push_back({"bubble (idle)", {}});
  s.push_back({"straggler", {}});
  s.push_back({"dp comm (exposed)", {}});
  s.push_back({"optimizer", {}});
  for (const StageTime& t : e.stage_times) {
    cats.push_back(t.name);
    size_t i = 0;
    s[i++].values.push_back(t.fwd_compute_s * 1e3);
    s[i++].values.push_back(t.bwd_compute_s * 1e3);
    s[i++].values.push_back(t.recompute_s * 1e3);
    for (Group g : kChunkGroups) s[i++].values.push_back(t.exposed_comm_s(static_cast<size_t>(g)) * 1e3);
    s[i++].values.push_back(t.p2p_wait_s * 1e3);
    s[i++].values.push_back(t.idle_s * 1e3);
    s[i++].values.push_back(t.pipeline_s * (e.straggler_ratio - 1) * 1e3);
    s[i++].values.push_back(
        (t.exposed_comm_s(static_cast<size_t>(Group::DP)) + t.exposed_comm_s(static_cast<size_t>(Group::EDP))) * 1e3);
    s[i++].values.push_back(t.optimizer_s * 1e3);
  }
  return stacked_bars("time-per-stage", "Time per stage (ms per step)", cats, s, "ms");
}

// Memory per reported stage as the memory model counts it: static parts, the saved activations
// of the micro-batches in flight at the peak, the running op's transient memory beyond them, the
// allocator's reserve; each stage's limit from the fit verdict, and the device size.
std::string memory_plot(const PlanInputs& in, const Estimate& e) {
  std::vector<std::string> cats;
  std::vector<Series> s = {{"weights", {}},
                           {"gradients", {}},
                           {"optimizer states", {}},
                           {"other static", {}},
                           {"activations saved (micro-batches in flight)", {}},
                           {"transient (running op)", {}},
                           {"allocator reserve", {}}};
  const FitRule rule = fit_rule(in.system, e.mode);
  RowLimits limits;
  limits.name = "fit limit";
  for (const StageMemory& m : e.stages) {
    cats.push_back(m.name);
    const double saved = m.peak_alloc_bytes - m.model_bytes - m.peak_transient_bytes;
    s[0].values.push_back(m.weight_bytes / kGiB);
    s[1].values.push_back(m.grad_bytes / kGiB);
    s[2].values.push_back(m.state_bytes / kGiB);
    s[3].values.push_back((m.model_bytes - m.weight_bytes - m.grad_bytes - m.state_bytes) / kGiB);
    s[4].values.push_back(saved / kGiB);
    s[5].values.push_back(m.peak_transient_bytes / kGiB);
    s[6].values.push_back((m.peak_reserved_bytes - m.peak_alloc_bytes) / kGiB);
    const FitVerdict v = fit_verdict(m, rule);
    const double compared = rule.use_reserved ? m.peak_reserved_bytes : m.peak_alloc_bytes;
    limits.values.push_back(v.known ? (compared + v.headroom_bytes) / kGiB : 0);
  }
  if (!limits.values.empty() && limits.values.front() > 0)
    limits.note = rule.cache_release && rule.use_reserved
                      ? " (the reserved peak stays below it: FITS; only the allocated peak: TIGHT)"
                      : strprintf(" (the %s peak must stay below it)", rule.use_reserved ? "reserved" : "allocated");
  return stacked_bars("memory-per-stage", "Memory per stage (GiB, peak)", cats, s, "GiB", limits,
                      in.system.mem_bytes / kGiB, "device memory");
}

const char* kind_color(StepKind k) {
  switch (k) {
    case StepKind::Forward: return "#4e79a7";
    case StepKind::Backward: return "#59a14f";
    case StepKind::BackwardInput: return "#59a14f";
    case StepKind::BackwardWeight: return "#8cd17d";
    case StepKind::P2P: return "#f28e2b";
    case StepKind::Straggler: return "#bab0ac";
    case StepKind::DpComm: return "#b07aa1";
    case StepKind::Optimizer: return "#e15759";
    case StepKind::EpComm: return "#76b7b2";
    case StepKind::HostLaunch: return "#9c755f";
    case StepKind::HostSync: return "#ff9da7";
  }
  return "#000";
}

// The pipeline: one lane per rank for the compute stream, a thin lane below for its other streams.
std::string gantt_plot(const Estimate& e) {
  const double span = std::max(e.timeline.span(), 1e-12);
  const double lane = 26, side = 8, gap = 6, top = 30;
  const double per_rank = lane + side + gap;
  const double axis_y = top + per_rank * e.timeline.ranks;
  const double height = axis_y + 66;
  std::string o = "<svg id=\"pipeline-gantt\" class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(kWidth) +
                  "\" height=\"" + num(height) + "\" viewBox=\"0 0 " + num(kWidth) + " " + num(height) +
                  "\" role=\"img\"><title>Pipeline timeline</title>";
  o += "<text x=\"0\" y=\"18\" class=\"t\">Pipeline timeline (" + strprintf("%.1f", span * 1e3) + " ms)</text>";
  for (int32_t r = 0; r < e.timeline.ranks; ++r)
    o += "<text x=\"0\" y=\"" + num(top + per_rank * r + 18) + "\">pp rank " + std::to_string(r) + "</text>";
  // Time axis in ms over the whole step (round ticks; the last one at or past the step's end).
  const Ticks ticks = nice_ticks(0, span * 1e3);
  const double scale = kPlot / (ticks.hi * 1e-3);
  bool present[16] = {};
  for (const TimelineEvent& ev : e.timeline.events) {
    present[static_cast<size_t>(ev.kind) % 16] = true;
    const double x = kLabel + ev.start * scale, w = std::max((ev.end - ev.start) * scale, 0.3);
    const bool main = ev.stream == Stream::Compute;
    const double y = top + per_rank * ev.rank + (main ? 0 : lane + 1);
    std::string label = step_kind_name(ev.kind);
    if (ev.mb >= 0) label += " mb" + std::to_string(ev.mb);
    if (ev.chunk >= 0 && !e.ranks.empty() && e.ranks[0].chunks.size() > 1) label += " chunk" + std::to_string(ev.chunk);
    o += "<rect x=\"" + strprintf("%.2f", x) + "\" y=\"" + num(y) + "\" width=\"" + strprintf("%.2f", w) + "\" height=\"" +
         num(main ? lane : side) + "\" fill=\"" + kind_color(ev.kind) + "\" stroke=\"#fff\" stroke-width=\"0.3\"><title>" +
         label + strprintf(" %.3f-%.3f ms (%s)", ev.start * 1e3, ev.end * 1e3, stream_name(ev.stream)) + "</title></rect>";
  }
  o += x_axis(ticks, kLabel, kPlot, axis_y, "ms");
  // The legend lists the kinds drawn (a backward-weight pass only with a split backward, …).
  const double ly = axis_y + 30;
  const StepKind kinds[] = {StepKind::Forward,  StepKind::Backward,  StepKind::BackwardInput, StepKind::BackwardWeight,
                            StepKind::P2P,      StepKind::EpComm,    StepKind::DpComm,        StepKind::Optimizer,
                            StepKind::Straggler, StepKind::HostLaunch, StepKind::HostSync};
  double x = 0;
  for (StepKind k : kinds) {
    if (!present[static_cast<size_t>(k) % 16]) continue;
    if (k == StepKind::BackwardInput && present[static_cast<size_t>(StepKind::Backward) % 16]) continue;  // one colour
    o += legend_entry(x, ly, kind_color(k), step_kind_name(k));
    x += legend_width(step_kind_name(k));
  }
  return o + "</svg>\n";
}

// The ops taking the most time, summed over the pipeline stages.
std::string top_ops_plot(const Estimate& e, size_t top_n) {
  std::map<std::pair<std::string, std::string>, BreakdownRow> rows;
  for (const StageBreakdown& b : stage_breakdowns(e))
    for (const BreakdownRow& r : b.by_op) {
      BreakdownRow& t = rows[{r.layer_type, r.op}];
      t.layer_type = r.layer_type;
      t.op = r.op;
      t.fwd_s += r.fwd_s;
      t.bwd_s += r.bwd_s;
      t.recompute_s += r.recompute_s;
      t.comm_s += r.comm_s;
    }
  std::vector<BreakdownRow> sorted;
  for (auto& [k, r] : rows) sorted.push_back(r);
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.total_s() > b.total_s(); });
  while (!sorted.empty() && sorted.back().total_s() <= 0) sorted.pop_back();
  if (sorted.size() > top_n) sorted.resize(top_n);
  std::vector<std::string> cats;
  std::vector<Series> s = {{"forward", {}}, {"backward", {}}, {"recompute", {}}, {"collectives", {}}};
  for (const auto& r : sorted) {
    cats.push_back(r.op + (r.layer_type == "dense_layer" || r.layer_type == "moe_layer" ? "" : " (" + r.layer_type + ")"));
    s[0].values.push_back(r.fwd_s * 1e3);
    s[1].values.push_back(r.bwd_s * 1e3);
    s[2].values.push_back(r.recompute_s * 1e3);
    s[3].values.push_back(r.comm_s * 1e3);
  }
  return stacked_bars("top-ops", "Top ops by time (ms per step, all stages)", cats, s, "ms");
}

std::string page(const std::string& title, const std::string& body) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + html_escape(title) +
         "</title>\n<style>body{font:14px sans-serif;margin:24px;color:#222}svg.plot{display:block;margin:18px 0;max-width:100%;height:auto}"
         "svg text{font:12px sans-serif}svg text.t{font-weight:bold;font-size:14px}table{border-collapse:collapse}"
         "td,th{padding:3px 10px;text-align:right;border-bottom:1px solid #ddd}td:first-child,th:first-child{text-align:left}"
         ".headline td{font-size:16px}</style></head>\n<body>\n<h1>" +
         html_escape(title) + "</h1>\n" + body + "</body></html>\n";
}

}  // namespace

std::string perf_report_section(const PlanInputs& in, const Estimate& e) {
  std::string o = "<section id=\"perf-report\">\n<table class=\"headline\">";
  auto row = [&](const std::string& k, const std::string& v, const std::string& id) {
    o += "<tr><td>" + k + "</td><td id=\"" + id + "\">" + v + "</td></tr>";
  };
  row("step time", strprintf("%.2f ms", e.iteration_time_s * 1e3), "step-time");
  const Throughput t = in.mfu == MfuConvention::Megatron ? megatron_throughput(in.model, in.settings, in.system, e)
                                                         : Throughput{e.tflops_per_gpu, e.mfu};
  const double peak_tflops = mfu_peak_flops(in.system) / kTera;
  row("MFU (" + std::string(mfu_convention_name(in.mfu)) + strprintf(", of the %.0f TFLOP/s default peak)", peak_tflops),
      strprintf("%.2f %%", t.mfu * 100), "mfu");
  row("TFLOP/s per GPU", strprintf("%.1f", t.tflops_per_gpu), "tflops");
  row("tokens/s per GPU", strprintf("%.1f", e.tokens_per_s_per_gpu), "tokens");
  row("peak reserved memory", strprintf("%.2f GiB of %.0f GiB", e.peak_reserved_bytes() / kGiB, in.system.mem_bytes / kGiB),
      "peak-memory");
  const FitVerdict fit = fit_verdict(e, fit_rule(in.system, e.mode));
  if (fit.known)
    row("memory verdict",
        fit.state == FitState::Fits ? strprintf("FITS, headroom %.2f GiB", fit.headroom_bytes / kGiB)
        : fit.fits ? strprintf("TIGHT, headroom %.2f GiB with the allocator's reserve, %.2f GiB without",
                               fit.headroom_bytes / kGiB, fit.floor_headroom_bytes / kGiB)
                   : strprintf("DOES NOT FIT, %.2f GiB over the limit", -fit.headroom_bytes / kGiB),
        "fit-verdict");
  row("plan", html_escape(parallelism_string(in.settings) + ", " + e.schedule + ", " + e.p2p + " p2p"), "plan");
  o += "</table>\n";
  // What the plan does not do as given, as the summary's warning lines: nothing is dropped silently.
  if (!in.not_modeled.empty() || !in.no_effect.empty() || fit.tight()) {
    o += "<ul id=\"warnings\">";
    if (fit.tight()) o += "<li class=\"fit-tight\">" + html_escape(fit_warning(fit)) + "</li>";
    if (!in.not_modeled.empty())
      o += "<li>given but not modeled (the prediction ignores them): " + html_escape(join(in.not_modeled)) + "</li>";
    for (const NoEffect& n : in.no_effect) o += "<li class=\"no-effect\">" + html_escape(no_effect_line(n)) + "</li>";
    o += "</ul>\n";
  }
  o += time_plot(e) + memory_plot(in, e) + gantt_plot(e) + top_ops_plot(e, 15);
  return o + "</section>\n";
}

std::string perf_html(const PlanInputs& in, const Estimate& e) {
  const std::string name = in.model.model_name.empty() ? in.model_source : in.model.model_name;
  return page("trainsim: " + name + " " + parallelism_string(in.settings), perf_report_section(in, e));
}

std::vector<size_t> pareto_front(const std::vector<Candidate>& c) {
  std::vector<size_t> idx(c.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    return c[a].iteration_time_s != c[b].iteration_time_s ? c[a].iteration_time_s < c[b].iteration_time_s
                                                           : c[a].peak_bytes < c[b].peak_bytes;
  });
  std::vector<size_t> front;
  double best_mem = 1e300;
  for (size_t i : idx)
    if (c[i].peak_bytes < best_mem) {
      front.push_back(i);
      best_mem = c[i].peak_bytes;
    }
  return front;
}

std::string search_report_section(const SearchResult& r, const std::string& title) {
  std::string o = "<section id=\"search-report\">\n";
  o += strprintf("<p id=\"search-counts\">%lld candidates evaluated, %lld feasible, %zu shown; memory limit %.2f GiB</p>\n",
                 static_cast<long long>(r.evaluated), static_cast<long long>(r.feasible), r.candidates.size(),
                 r.memory_limit_bytes / kGiB);
  const auto& c = r.candidates;
  // Axes over the candidates' range (and the memory limit), with round ticks.
  double tlo = 1e300, thi = 0, mlo = 1e300, mhi = 0;
  for (const auto& x : c) {
    tlo = std::min(tlo, x.iteration_time_s * 1e3);
    thi = std::max(thi, x.iteration_time_s * 1e3);
    mlo = std::min(mlo, x.peak_bytes / kGiB);
    mhi = std::max(mhi, x.peak_bytes / kGiB);
  }
  if (r.memory_limit_bytes > 0) {
    mlo = std::min(mlo, r.memory_limit_bytes / kGiB);
    mhi = std::max(mhi, r.memory_limit_bytes / kGiB);
  }
  if (c.empty()) tlo = thi = mlo = mhi = 0;
  const Ticks tt = nice_ticks(tlo, thi), mt = nice_ticks(mlo, mhi);
  const double left = 70, top = 30, w = kWidth - 130, h = 380;
  auto px = [&](double t) { return left + (t - tt.lo) / (tt.hi - tt.lo) * w; };
  auto py = [&](double m) { return top + h - (m - mt.lo) / (mt.hi - mt.lo) * h; };
  const double legend_y = top + h + 50;
  o += "<svg id=\"search-scatter\" class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(kWidth) +
       "\" height=\"" + num(legend_y + 24) + "\" viewBox=\"0 0 " + num(kWidth) + " " + num(legend_y + 24) +
       "\" role=\"img\"><title>Step time vs memory</title>";
  o += "<text x=\"0\" y=\"18\" class=\"t\">" + html_escape(title) + ": step time vs peak memory</text>";
  o += x_axis(tt, left, w, top + h, "ms");
  o += "<text class=\"unit\" x=\"" + num(left + w / 2) + "\" y=\"" + num(top + h + 36) +
       "\" text-anchor=\"middle\">step time (ms)</text>";
  o += "<g class=\"axis\"><line x1=\"" + num(left) + "\" y1=\"" + num(top) + "\" x2=\"" + num(left) + "\" y2=\"" +
       num(top + h) + "\" stroke=\"#666\"/>";
  for (double m : mt.values)
    o += "<line x1=\"" + num(left - 4) + "\" y1=\"" + num(py(m)) + "\" x2=\"" + num(left) + "\" y2=\"" + num(py(m)) +
         "\" stroke=\"#666\"/><text class=\"tick\" x=\"" + num(left - 8) + "\" y=\"" + num(py(m) + 4) +
         "\" text-anchor=\"end\">" + tick_label(mt, m) + "</text>";
  o += "<text class=\"unit\" transform=\"rotate(-90)\" x=\"" + num(-(top + h / 2)) + "\" y=\"14\" text-anchor=\"middle\">"
       "peak memory (GiB)</text></g>";
  if (r.memory_limit_bytes > 0)
    o += "<line class=\"limit\" x1=\"" + num(left) + "\" y1=\"" + num(py(r.memory_limit_bytes / kGiB)) + "\" x2=\"" +
         num(left + w) + "\" y2=\"" + num(py(r.memory_limit_bytes / kGiB)) +
         "\" stroke=\"#d00\" stroke-dasharray=\"6 3\"><title>memory limit</title></line>";
  o += legend_entry(0, legend_y, "#4e79a7", "candidate");
  o += legend_entry(190, legend_y, "#e15759", "Pareto front (no plan faster with less memory)", true, false);
  if (r.memory_limit_bytes > 0)
    o += legend_entry(570, legend_y, "#d00", strprintf("memory limit %.1f GiB", r.memory_limit_bytes / kGiB), true);
  const std::vector<size_t> front = pareto_front(c);
  std::string path;
  for (size_t i : front)
    path += (path.empty() ? "M" : " L") + strprintf("%.1f %.1f", px(c[i].iteration_time_s * 1e3), py(c[i].peak_bytes / kGiB));
  if (!path.empty()) o += "<path class=\"pareto\" d=\"" + path + "\" fill=\"none\" stroke=\"#e15759\" stroke-width=\"2\"/>";
  for (size_t i = 0; i < c.size(); ++i) {
    const bool on_front = std::find(front.begin(), front.end(), i) != front.end();
    o += "<circle class=\"" + std::string(on_front ? "candidate pareto" : "candidate") + "\" cx=\"" +
         num(px(c[i].iteration_time_s * 1e3)) + "\" cy=\"" + num(py(c[i].peak_bytes / kGiB)) + "\" r=\"" +
         (on_front ? "5" : "3.5") + "\" fill=\"" + (on_front ? "#e15759" : "#4e79a7") + "\" fill-opacity=\"0.7\"><title>" +
         html_escape(c[i].parallelism()) + strprintf(" mbs %lld, %s: %.1f ms, %.2f GiB",
                                                     static_cast<long long>(c[i].micro_batch_size()),
                                                                   recompute_kind_name(c[i].recompute),
                                                                   c[i].iteration_time_s * 1e3, c[i].peak_bytes / kGiB) +
         "</title></circle>";
  }
  o += "</svg>\n<table id=\"search-best\"><tr><th>#</th><th>plan</th><th>mbs</th><th>recompute</th><th>step ms</th>"
       "<th>MFU %</th><th>peak GiB</th><th>fit, headroom GiB</th></tr>";
  // A TIGHT plan is feasible, ranked by time; its headroom without the allocator's reserve beside.
  for (size_t i = 0; i < std::min<size_t>(c.size(), 10); ++i)
    o += strprintf("<tr><td>%zu</td><td>%s</td><td>%lld</td><td>%s</td><td>%.1f</td><td>%.2f</td><td>%.2f</td>"
                   "<td class=\"fit\">%s %+.2f%s</td></tr>", i + 1,
                   html_escape(c[i].parallelism()).c_str(), static_cast<long long>(c[i].micro_batch_size()), recompute_kind_name(c[i].recompute),
                   c[i].iteration_time_s * 1e3, c[i].mfu * 100, c[i].peak_bytes / kGiB, fit_state_name(c[i].fit.state),
                   c[i].fit.headroom_bytes / kGiB,
                   c[i].fit.tight() ? strprintf(" (%+.2f without the reserve)", c[i].fit.floor_headroom_bytes / kGiB).c_str()
                                    : "");
  return o + "</table>\n</section>\n";
}

std::string search_html(const SearchResult& r, const std::string& title) {
  return page("trainsim search: " + title, search_report_section(r, title));
}

}  // namespace trainsim
