// `trainsim perf`: predict one plan; with no arguments, the embedded default plan.
#include <cstdio>
#include <filesystem>

#include "cli/cli_app.h"
#include "cli/commands.h"
#include "cli/plan_options.h"
#include "config/output_file.h"
#include "config/presets.h"
#include "config/validate.h"
#include "core/error.h"
#include "core/units.h"
#include "estimate/estimate.h"
#include "estimate/throughput.h"
#include "estimate/finite.h"
#include "report/report.h"

namespace trainsim::cli {

namespace {
// The plan `trainsim perf` runs without arguments (and `make run`).
constexpr const char* kDefaultModel = "llama3-8b";
constexpr const char* kDefaultStrategy = "tp2-pp2-dp2-zero1";
constexpr const char* kDefaultSystem = "h100-sxm-80g";
}  // namespace

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
  app.add_flag("--require-fit", require_fit, "exit 3 when the peak reserved memory exceeds the device memory");
  std::string compat;
  add_compat_option(app, compat);
  if (!parse_args(app, "perf", args)) return 0;
  const Mode mode = compat_mode(compat, "perf");

  const MfuConvention convention = parse_mfu_convention(mfu, "--mfu");
  // A Megatron command line or an HF config describes the user's own run: no default model then.
  const bool own = !po.megatron_args.empty();
  PlanRequest request = make_request(po);
  request.mode = mode;
  const PlanConfigs pc = build_plan(request, own ? "" : kDefaultModel, kDefaultStrategy);
  const ConfigText yt = resolve_config("system", system);
  PlanInputs in;
  in.model = pc.model;
  in.strategy = pc.strategy;
  in.system = load_system(yt.text, yt.source);
  in.model_source = pc.model_source;
  in.strategy_source = pc.strategy_source;
  in.system_source = yt.source;
  in.mfu = convention;
  in.notes = pc.notes;
  in.not_modeled = pc.not_modeled;
  in.ignored = pc.ignored;
  const Plan plan = resolve_plan(in.model, in.strategy, in.system, mode,
                                 {in.model_source, in.strategy_source, in.system_source});
  const Estimate e = estimate(plan);
  require_finite(e, {in.model_source, in.strategy_source, in.system_source});
  const std::string json_text = estimate_to_json(in, e);
  const std::string text = estimate_summary(in, e);
  std::fputs(json ? json_text.c_str() : text.c_str(), stdout);
  if (!out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(out_dir, ec);
    if (ec) throw ConfigError(out_dir, "", "cannot create directory: " + ec.message());
    write_file_atomic(out_dir + "/result.json", json_text);
    write_file_atomic(out_dir + "/summary.txt", text);
  }
  if (require_fit && e.peak_reserved_bytes() > in.system.mem_bytes) {
    std::fprintf(stderr, "trainsim perf: does not fit: peak reserved memory %.2f GiB exceeds the device's %.2f GiB\n",
                 e.peak_reserved_bytes() / kGiB, in.system.mem_bytes / kGiB);
    return 3;
  }
  return 0;
}

}  // namespace trainsim::cli
