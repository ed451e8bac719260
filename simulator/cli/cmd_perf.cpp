// `trainsim perf`: predict one plan; with no arguments, the embedded default plan.
#include <cstdio>
#include <filesystem>
#include <optional>

#include "cli/cli_app.h"
#include "cli/commands.h"
#include "cli/plan_options.h"
#include "inputs/output_file.h"
#include "system/presets.h"
#include "core/error.h"
#include "core/text.h"
#include "core/units.h"
#include "estimate/throughput.h"
#include "estimate/finite.h"
#include "estimate/fit.h"
#include "views/report.h"
#include "views/breakdown.h"
#include "views/html_report.h"
#include "memory/non_tensor.h"
#include "views/memory_csv.h"
#include "views/predict.h"
#include "views/registry.h"
#include "views/trace.h"

namespace trainsim::cli {

int cmd_perf(const Args& args) {
  CLI::App app("Predict step time, MFU and memory of one plan. Without a model or strategy, the "
               "default plan (" + std::string(kDefaultModel) + ", " + kDefaultStrategy + ") is used.",
               "trainsim perf");
  PlanOptions po;
  add_plan_options(app, po);
  std::string system = kDefaultSystem, out_dir, mfu = "megatron";
  bool json = false;
  app.add_option("--system", system, std::string("system preset or JSON file (default ") + kDefaultSystem + ")");
  app.add_flag("--json", json, "print one JSON document instead of the summary");
  app.add_option("--out-dir", out_dir, "also write result.json and summary.txt into this directory");
  app.add_option("--mfu", mfu, "convention of the headline MFU and TFLOP/s: megatron (as Megatron-LM logs it, "
                               "causal attention at half; default) or simumax (full attention)");
  bool require_fit = false;
  app.add_flag("--require-fit", require_fit, "exit 3 when the peak reserved memory exceeds the device memory less "
                                            "its unusable part (the fit verdict)");
  std::string compat, trace_file;
  int64_t trace_detail = TraceOptions{}.detail_micro_batches;
  app.add_option("--trace", trace_file, "write the step as a Chrome trace (JSON for Perfetto / chrome://tracing)");
  app.add_option("--trace-detail", trace_detail,
                 "micro-batches drawn op by op at each end of the step in --trace and --memory-timeline "
                 "(default 2; -1: all)");
  std::string breakdown, memory_file, html_file, csv_file;
  app.add_option("--html", html_file, "write a self-contained HTML report (time and memory per stage, pipeline, top ops)");
  app.add_option("--memory-timeline", memory_file,
                 "write allocated memory per stage after each op as CSV (peak and what was live there)");
  app.add_option("--breakdown", breakdown, "add time by layer type or by op per stage to the summary: layer or op");
  app.add_option("--csv", csv_file, "with --breakdown: also write its rows to this CSV file (one row per stage and op "
                                    "or layer type, for a spreadsheet)");
  add_compat_option(app, compat);
  if (!parse_args(app, "perf", args)) return 0;
  const Mode mode = compat_mode(compat, "perf");
  if (trace_detail < -1)
    throw UsageError("perf: --trace-detail: expected -1 (every micro-batch) or a count >= 0, got " +
                     std::to_string(trace_detail));
  std::optional<BreakdownLevel> level;
  if (!breakdown.empty()) level = parse_breakdown_level(breakdown, "perf: --breakdown");
  if (!csv_file.empty() && !level) throw UsageError("perf: --csv writes the breakdown's rows: give --breakdown layer|op");

  const MfuConvention convention = parse_mfu_convention(mfu, "--mfu");
  // A Megatron command line or an HF config describes the user's own run: no default model then.
  const bool own = !po.megatron_args.empty();
  const Prediction pr = predict(make_request(po), own ? "" : kDefaultModel, kDefaultStrategy,
                                resolve_config("system", system), convention, mode);
  const PlanInputs& in = pr.in;
  const Estimate& e = pr.estimate;
  ViewOptions vo;
  vo.level = level;
  vo.trace_detail = trace_detail;
  const std::string json_text = view("json").render(in, e, vo);
  const std::string text = view("summary").render(in, e, vo);
  std::fputs(json ? json_text.c_str() : text.c_str(), stdout);
  if (!out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(out_dir, ec);
    if (ec) throw ConfigError(out_dir, "", "cannot create directory: " + ec.message());
    write_file_atomic(out_dir + "/result.json", json_text);
    write_file_atomic(out_dir + "/summary.txt", text);
  }
  if (!trace_file.empty()) {
    TraceStats ts;
    vo.trace_stats = &ts;
    const std::string trace = view("trace").render(in, e, vo);
    write_file_atomic(trace_file, trace);
    std::fprintf(stderr, "trainsim perf: wrote %s (%zu events, %.1f MiB; %lld steady-state passes drawn whole)\n",
                 trace_file.c_str(), ts.events, static_cast<double>(trace.size()) / kMiB,
                 static_cast<long long>(ts.aggregated_steps));
  }
  // The files each flag asks for, by view name (views/registry.h).
  for (const auto& [file, name] : {std::pair{&html_file, "html"}, std::pair{&csv_file, "breakdown_csv"},
                                   std::pair{&memory_file, "memory_timeline"}})
    if (!file->empty()) write_file_atomic(*file, view(name).render(in, e, vo));
  const FitRule rule = fit_rule(in.system, e.mode);
  const FitVerdict fit = fit_verdict(e, rule);
  // TIGHT fits (exit 0), with its one warning line.
  if (fit.tight()) std::fprintf(stderr, "trainsim perf: warning: %s\n", fit_warning(fit).c_str());
  if (require_fit && !fit.fits) {
    const StageMemory* worst = tightest_stage(e, rule);
    if (worst && rule.stage_non_tensor)
      std::fprintf(stderr, "trainsim perf: does not fit: peak reserved memory %.2f GiB exceeds the limit %.2f GiB "
                   "(device %.2f GiB less %.2f GiB outside PyTorch: %s)%s\n",
                   worst->peak_reserved_bytes / kGiB, rule.stage_limit_bytes(*worst) / kGiB, rule.device_bytes / kGiB,
                   worst->non_tensor_bytes / kGiB, non_tensor_memory(in.model, in.settings, in.system).terms().c_str(),
                   rule.cache_release ? strprintf("; %.2f GiB over even without the allocator's reserve",
                                                  -fit.floor_headroom_bytes / kGiB).c_str()
                                      : "");
    else
      std::fprintf(stderr, "trainsim perf: does not fit: peak reserved memory %.2f GiB exceeds the limit %.2f GiB "
                   "(device %.2f GiB less %.2f GiB unusable)\n", e.peak_reserved_bytes() / kGiB,
                   rule.limit_bytes() / kGiB, rule.device_bytes / kGiB, rule.unusable_bytes / kGiB);
    return 3;
  }
  return 0;
}

}  // namespace trainsim::cli
