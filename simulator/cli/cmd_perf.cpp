// `trainsim perf`: predict one plan; with no arguments, the embedded default plan.
#include <cstdio>
#include <filesystem>

#include "cli/args.h"
#include "cli/commands.h"
#include "config/output_file.h"
#include "config/presets.h"
#include "config/validate.h"
#include "core/error.h"
#include "core/text.h"
#include "core/units.h"
#include "estimate/estimate.h"
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
  ArgParser p("perf", "trainsim perf [--model M --strategy S --system Y] [--json] [--out DIR]");
  p.option("model", std::string("model preset or JSON file (default ") + kDefaultModel + ")");
  p.option("strategy", std::string("strategy preset or JSON file (default ") + kDefaultStrategy + ")");
  p.option("system", std::string("system preset or JSON file (default ") + kDefaultSystem + ")");
  p.flag("json", "print one JSON document instead of the summary");
  p.option("out", "also write result.json and summary.txt into this directory");
  p.flag("require-fit", "exit 3 when the peak reserved memory exceeds the device memory");
  if (!p.parse(args)) return 0;
  if (!p.positionals().empty())
    throw UsageError("perf: unexpected argument '" + p.positionals()[0] + "'\n" + p.help());
  const ConfigText mt = resolve_config("model", p.get("model", kDefaultModel));
  const ConfigText st = resolve_config("strategy", p.get("strategy", kDefaultStrategy));
  const ConfigText yt = resolve_config("system", p.get("system", kDefaultSystem));
  PlanInputs in{load_model(mt.text, mt.source), load_strategy(st.text, st.source),
                load_system(yt.text, yt.source), mt.source, st.source, yt.source};
  check_plan(in.model, in.strategy, in.system, {in.model_source, in.strategy_source, in.system_source});
  const Estimate e = estimate(in.model, in.strategy, in.system);
  require_finite(e, {in.model_source, in.strategy_source, in.system_source});
  const std::string json = estimate_to_json(in, e);
  const std::string text = estimate_summary(in, e);
  std::fputs(p.has("json") ? json.c_str() : text.c_str(), stdout);
  if (p.has("out")) {
    const std::string dir = p.get("out");
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw ConfigError(dir, "", "cannot create directory: " + ec.message());
    for (const auto& [name, body] : {std::pair{"result.json", json}, std::pair{"summary.txt", text}})
      write_file_atomic(dir + "/" + name, body);
  }
  if (p.has("require-fit") && e.peak_reserved_bytes() > in.system.mem_bytes) {
    std::fprintf(stderr, "trainsim perf: does not fit: peak reserved memory %.2f GiB exceeds the device's %.2f GiB\n",
                 e.peak_reserved_bytes() / kGiB, in.system.mem_bytes / kGiB);
    return 3;
  }
  return 0;
}

}  // namespace trainsim::cli
