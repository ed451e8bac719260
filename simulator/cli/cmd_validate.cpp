// `trainsim validate`: predicts every case of the accuracy tables (validation/) and reports the
// signed error against the real measurement, next to the peer simulator's published error.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cli/cli_app.h"
#include "cli/commands.h"
#include "inputs/output_file.h"
#include "system/system_config.h"
#include "core/error.h"
#include "core/text.h"
#include "core/units.h"
#include "cli/validation_runner.h"
#include "cli/validate_report.h"

namespace trainsim::cli {
namespace {

std::string fmt_ms(double v) { return strprintf(v >= 100 ? "%.1f" : "%.3f", v); }
// A compared value: times in ms, memory in GiB (two decimals, as the tables publish it).
std::string fmt_value(ValidationMetric m, double v) { return is_memory_metric(m) ? strprintf("%.2f", v) : fmt_ms(v); }
// The verdict of one case, e.g. "FITS +5.02", "TIGHT -0.52 (+3.52 without the reserve)" or
// "DOES NOT FIT -6.74" (headroom in GiB).
std::string fmt_fit(const CaseResult& r) {
  if (!r.ok() || !r.fit.known) return "-";
  return strprintf("%s %+.2f", fit_state_name(r.fit.state), r.fit.headroom_bytes / kGiB) +
         (r.fit.tight() ? strprintf(" (%+.2f without the reserve)", r.fit.floor_headroom_bytes / kGiB) : "");
}
std::string fmt_pct(double v) { return strprintf("%+.2f", v); }
std::string fmt_opt_pct(const std::optional<double>& v) { return v ? fmt_pct(*v) : "-"; }

// Indents the continuation lines of a multi-line message.
std::string indent_lines(const std::string& msg, const std::string& pad) {
  std::string out;
  for (char ch : msg) {
    out += ch;
    if (ch == '\n') out += pad;
  }
  return out;
}

void print_table(const TableRun& run) {
  const ValidationTable& t = run.table;
  std::printf("%s: %zu cases, system %s\n", t.dir.c_str(), t.cases.size(), t.system.c_str());
  if (!run.system_error.empty())
    std::printf("  system error: %s\n", indent_lines(run.system_error, "    ").c_str());
  size_t w = 4;
  for (const auto& c : t.cases) w = std::max(w, c.name.size());
  const int cw = static_cast<int>(w);
  std::printf("  %-*s  %-12s %10s %10s %9s %8s  %s\n", cw, "case", "metric", "real", "predicted",
              "error %", "peer %", "fit, headroom GiB");
  for (size_t i = 0; i < t.cases.size(); ++i) {
    const ValidationCase& c = t.cases[i];
    const CaseResult& r = run.results[i];
    if (!r.ok()) {
      if (run.system_error.empty())
        std::printf("  %-*s  FAILED: %s\n", cw, c.name.c_str(),
                    indent_lines(r.error, "    ").c_str());
      else
        std::printf("  %-*s  FAILED (no system)\n", cw, c.name.c_str());
      continue;
    }
    for (size_t k = 0; k < t.metrics.size(); ++k) {
      const std::string fit = k == 0 ? "  " + fmt_fit(r) : "";
      std::printf("  %-*s  %-12s %10s %10s %9s %8s%s\n", cw, k == 0 ? c.name.c_str() : "",
                  metric_name(t.metrics[k]), fmt_value(t.metrics[k], c.real[k]).c_str(),
                  fmt_value(t.metrics[k], r.predicted[k]).c_str(),
                  fmt_pct(signed_error_pct(r.predicted[k], c.real[k])).c_str(),
                  fmt_opt_pct(c.peer_err_pct[k]).c_str(), fit.c_str());
    }
  }
  for (const auto& s : run.summary) {
    std::printf("  %s: %lld/%lld compared", metric_name(s.metric), static_cast<long long>(s.compared),
                static_cast<long long>(s.cases));
    if (s.compared)
      std::printf(", mean |error| %.2f %%, max |error| %.2f %% (%s)", s.mean_abs_err_pct,
                  s.max_abs_err_pct, s.max_case.c_str());
    if (s.peer_compared)
      std::printf("; peer on %lld of these rows: mean |error| %.2f %%, max |error| %.2f %%",
                  static_cast<long long>(s.peer_compared), s.peer_mean_abs_err_pct, s.peer_max_abs_err_pct);
    std::printf("\n");
    if (s.peer_published != s.peer_compared)
      std::printf("  %s: peer on all %lld rows it published: mean |error| %.2f %%, max |error| %.2f %%\n",
                  metric_name(s.metric), static_cast<long long>(s.peer_published),
                  s.peer_published_mean_abs_err_pct, s.peer_published_max_abs_err_pct);
  }
  // Every real run fit its GPUs: a "does not fit" verdict is a miss of the memory model.
  const FitSummary f = summarize_fit(run.table, run.results);
  if (f.predicted && !f.whole_runs) {
    std::printf("  fit verdict: not counted: per-layer timings, the cases are not the runs that were timed "
                "(%lld/%lld plans as written predicted to fit)\n",
                static_cast<long long>(f.fits), static_cast<long long>(f.predicted));
  } else if (f.predicted) {
    std::printf("  fit verdict: %lld/%lld real runs predicted to fit; least headroom %.2f GiB (%s)\n",
                static_cast<long long>(f.fits), static_cast<long long>(f.predicted), f.least_headroom_gib,
                f.least_case.c_str());
    std::printf("  predicted not to fit: %lld of %lld%s%s\n", static_cast<long long>(f.not_fit.size()),
                static_cast<long long>(f.predicted), f.not_fit.empty() ? "" : ": ", join(f.not_fit).c_str());
    if (!f.tight.empty())
      std::printf("  tight (fit only if the caching allocator releases its cache): %zu of %lld: %s\n", f.tight.size(),
                  static_cast<long long>(f.predicted), join(f.tight).c_str());
  }
  std::printf("\n");
}

void print_overview(const std::vector<TableRun>& runs) {
  size_t w = 5;
  for (const auto& r : runs) w = std::max(w, r.table.name.size());
  const int tw = static_cast<int>(w);
  std::printf("summary (|error| in %%; peer = the peer's published error on the same rows)\n");
  std::printf("  %-*s  %-12s %9s %11s %11s %11s %11s\n", tw, "table", "metric", "compared",
              "mean", "max", "peer mean", "peer max");
  for (const auto& r : runs)
    for (const auto& s : r.summary) {
      std::string n = strprintf("%lld/%lld", static_cast<long long>(s.compared), static_cast<long long>(s.cases));
      std::string mean = s.compared ? strprintf("%.2f", s.mean_abs_err_pct) : "-";
      std::string max = s.compared ? strprintf("%.2f", s.max_abs_err_pct) : "-";
      std::string pmean = s.peer_compared ? strprintf("%.2f", s.peer_mean_abs_err_pct) : "-";
      std::string pmax = s.peer_compared ? strprintf("%.2f", s.peer_max_abs_err_pct) : "-";
      std::printf("  %-*s  %-12s %9s %11s %11s %11s %11s\n", tw, r.table.name.c_str(),
                  metric_name(s.metric), n.c_str(), mean.c_str(), max.c_str(), pmean.c_str(), pmax.c_str());
    }
  // Every run in the tables ran: each "does not fit" is a miss of the memory model.
  std::printf("fit verdict (every run ran; predicted not to fit = a miss)\n");
  std::printf("  %-*s  %9s %13s %7s %14s\n", tw, "table", "predicted", "not to fit", "tight", "least headroom");
  for (const auto& r : runs) {
    const FitSummary f = summarize_fit(r.table, r.results);
    if (!f.whole_runs) {
      std::printf("  %-*s  %9lld %13s %7s %14s  (per-layer timings, not runs)\n", tw, r.table.name.c_str(),
                  static_cast<long long>(f.predicted), "not counted", "-", "-");
      continue;
    }
    std::printf("  %-*s  %9lld %13s %7s %14s\n", tw, r.table.name.c_str(), static_cast<long long>(f.predicted),
                f.predicted ? strprintf("%zu of %lld", f.not_fit.size(), static_cast<long long>(f.predicted)).c_str()
                            : "-",
                f.predicted ? std::to_string(f.tight.size()).c_str() : "-",
                f.predicted ? strprintf("%.2f GiB", f.least_headroom_gib).c_str() : "-");
  }
}

}  // namespace

int cmd_validate(const Args& args) {
  CLI::App app("Compare predictions with real measurements (the accuracy tables).", "trainsim validate");
  std::string root = "validation", csv;
  std::vector<std::string> wanted;
  bool json = false;
  app.add_option("DIR", root, "folder of table folders, or one table folder (default: validation)");
  app.add_option("--table", wanted, "run only this table (folder name); repeatable");
  std::vector<std::string> system_swaps;
  app.add_option("--system", system_swaps,
                 "NAME=SYSTEM: tables whose system.txt names NAME use SYSTEM (preset or file) instead; repeatable");
  app.add_option("--csv", csv, "also write one row per case and metric to this CSV file");
  app.add_flag("--json", json, "print the report as JSON instead of text");
  std::string compat;
  add_compat_option(app, compat);
  if (!parse_args(app, "validate", args)) return 0;
  const Mode mode = compat_mode(compat, "validate");

  std::vector<ValidationTable> tables = load_validation_tables(root, wanted, system_swaps);

  std::vector<TableRun> runs;
  int64_t failed = 0, total = 0;
  for (auto& t : tables) {
    runs.push_back(run_validation_table(std::move(t), mode));
    for (const auto& r : runs.back().results) {
      ++total;
      failed += r.ok() ? 0 : 1;
    }
    if (!json) {
      print_table(runs.back());
      std::fflush(stdout);
    }
  }
  if (json) {
    std::fputs(validate_json(runs).c_str(), stdout);
  } else {
    print_overview(runs);
    if (failed)
      std::printf("%lld of %lld cases failed\n", static_cast<long long>(failed), static_cast<long long>(total));
  }
  if (!csv.empty()) write_file_atomic(csv, validate_csv(runs));
  // Large errors are the report, not a failure; a case that could not be predicted is.
  return failed ? 1 : 0;
}

}  // namespace trainsim::cli
