// `trainsim shapes`: lists every efficiency-table key the given plans look up (the input of
// kernels_bench), marking the keys the given system has no measurement for.
#include <algorithm>
#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/commands.h"
#include "config/model_config.h"
#include "config/output_file.h"
#include "config/presets.h"
#include "config/shapes_file.h"
#include "config/strategy_config.h"
#include "config/system_config.h"
#include "core/error.h"
#include "estimate/shapes.h"

namespace trainsim::cli {
namespace {
constexpr const char* kGenericSystem = "h100-sxm-80g";
}  // namespace

int cmd_shapes(const Args& args) {
  ArgParser p("shapes",
              "trainsim shapes --model M --strategy S [--strategy S2 ...] [--system Y] [--out shapes.json]");
  p.option("model", "model preset name or JSON file");
  p.option("strategy", "strategy preset name or JSON file (repeatable)", true);
  p.option("system", "system preset or file: mark the keys it has no measurement for");
  p.option("out", "write shapes.json here (default: stdout)");
  if (!p.parse(args)) return 0;
  if (!p.positionals().empty())
    throw UsageError("shapes: unexpected argument '" + p.positionals()[0] + "'\n" + p.help());
  if (!p.has("model")) throw UsageError("shapes: --model is required\n" + p.help());
  if (!p.has("strategy")) throw UsageError("shapes: at least one --strategy is required\n" + p.help());

  ConfigText model_text = resolve_config("model", p.get("model"));
  ModelConfig model = load_model(model_text.text, model_text.source);
  // The plan needs a system to be legal (networks); without --system a generic preset stands in
  // and no entry is marked against it.
  bool have_system = p.has("system");
  std::string system_arg = p.get("system");
  if (!have_system) {
    auto names = preset_names("system");
    if (names.empty()) throw UsageError("shapes: no system preset is embedded; give --system\n" + p.help());
    system_arg = std::find(names.begin(), names.end(), kGenericSystem) != names.end() ? kGenericSystem : names.front();
  }
  ConfigText system_text = resolve_config("system", system_arg);
  SystemConfig sys = load_system(system_text.text, system_text.source);

  ShapesDoc doc;
  if (have_system) doc.system = sys.sys_name;
  std::map<std::pair<std::string, std::string>, size_t> index;
  for (const auto& strategy_arg : p.get_all("strategy")) {
    ConfigText st = resolve_config("strategy", strategy_arg);
    StrategyConfig strategy = load_strategy(st.text, st.source);
    auto plan = static_cast<int64_t>(doc.plans.size());
    doc.plans.push_back({p.get("model"), strategy_arg});
    for (const ShapeUse& use : list_shapes(model, strategy, sys)) {
      auto [it, fresh] = index.emplace(std::make_pair(use.op, use.key), doc.shapes.size());
      if (!fresh) {
        ShapeEntry& e = doc.shapes[it->second];
        e.count += use.count;
        if (e.plans.back() != plan) e.plans.push_back(plan);
        continue;
      }
      ShapeEntry e;
      e.op = use.op;
      e.key = use.key;
      e.shape = parse_shape_key(use.op, use.key, st.source, "(listed shape)");
      e.flops = use.flops;
      e.count = use.count;
      if (have_system) {
        auto op = sys.ops.find(use.op);
        e.in_system = op != sys.ops.end() && op->second.accurate.count(use.key) > 0;
      }
      e.plans.push_back(plan);
      doc.shapes.push_back(std::move(e));
    }
  }

  nlohmann::json prov;
  prov["tool"] = "trainsim shapes";
  prov["version"] = TRAINSIM_VERSION;
  prov["command"] = command_line("trainsim shapes", args);
  prov["date"] = utc_timestamp();
  doc.provenance_json = prov.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string text = shapes_to_json_text(doc);

  size_t missing = 0;
  for (const auto& e : doc.shapes) missing += e.in_system && !*e.in_system ? 1 : 0;
  if (p.has("out")) {
    write_file_atomic(p.get("out"), text);
    std::fprintf(stderr, "trainsim shapes: wrote %zu shapes to %s\n", doc.shapes.size(),
                 p.get("out").c_str());
  } else {
    std::fputs(text.c_str(), stdout);
  }
  if (have_system)
    std::fprintf(stderr, "trainsim shapes: %zu of %zu shapes have no measurement in system '%s'\n",
                 missing, doc.shapes.size(), sys.sys_name.c_str());
  return 0;
}

}  // namespace trainsim::cli
