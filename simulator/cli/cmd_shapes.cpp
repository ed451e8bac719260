// `trainsim shapes`: lists every efficiency-table key the given plans look up (the input of
// kernels_bench), marking the keys the given system has no measurement for.
#include <algorithm>
#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

#include "cli/cli_app.h"
#include "cli/commands.h"
#include "cli/plan_options.h"
#include "inputs/model_config.h"
#include "inputs/output_file.h"
#include "system/presets.h"
#include "calibration/shapes_file.h"
#include "inputs/strategy_config.h"
#include "system/system_config.h"
#include "core/error.h"
#include "compute/cost.h"
#include "estimate/shapes.h"

namespace trainsim::cli {
namespace {
constexpr const char* kGenericSystem = "h100-sxm-80g";
}  // namespace

int cmd_shapes(const Args& args) {
  CLI::App app("List every efficiency-table key the given plans look up (the input of kernels_bench).",
               "trainsim shapes");
  PlanOptions po;
  add_plan_options(app, po, {.strategy_repeatable = true, .shortcuts = true});
  std::string system_arg, out;
  app.add_option("--system", system_arg, "system preset or file: mark the keys it has no measurement for");
  app.add_option("--out", out, "write shapes.json here (default: stdout)");
  if (!parse_args(app, "shapes", args)) return 0;
  if (po.strategies.empty() && po.megatron_args.empty())
    throw UsageError("shapes: at least one --strategy (or --megatron-args) is required");
  // One plan per --strategy (or the Megatron command line); the model is the same for all.
  std::vector<PlanConfigs> plans;
  std::vector<std::string> plan_names;
  for (size_t i = 0; i < std::max<size_t>(1, po.strategies.size()); ++i) {
    plans.push_back(build_plan(make_request(po, i), "", ""));
    warn_about(plans.back(), "shapes");
    plan_names.push_back(i < po.strategies.size() ? po.strategies[i] : po.megatron_args);
  }
  const ModelConfig& model = plans.front().model;
  const std::string model_name = !po.model.empty() ? po.model : !po.hf_config.empty() ? po.hf_config : po.megatron_args;
  // The plan needs a system to be legal (networks); without --system a generic preset stands in
  // and no entry is marked against it.
  bool have_system = !system_arg.empty();
  if (!have_system) {
    auto names = preset_names("system");
    if (names.empty()) throw UsageError("shapes: no system preset is embedded; give --system");
    system_arg = std::find(names.begin(), names.end(), kGenericSystem) != names.end() ? kGenericSystem : names.front();
  }
  ConfigText system_text = resolve_config("system", system_arg);
  SystemConfig sys = load_system(system_text.text, system_text.source);

  ShapesDoc doc;
  if (have_system) doc.system = sys.sys_name;
  std::map<std::pair<std::string, std::string>, size_t> index;
  for (size_t pi = 0; pi < plans.size(); ++pi) {
    const StrategyConfig& strategy = plans[pi].strategy;
    auto plan = static_cast<int64_t>(doc.plans.size());
    doc.plans.push_back({model_name, plan_names[pi]});
    for (const ShapeUse& use : list_shapes(resolve_plan(model, strategy, sys, Mode::Default))) {
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
      e.shape = parse_shape_key(use.op, use.key, plans[pi].strategy_source, "(listed shape)");
      e.flops = use.flops;
      e.count = use.count;
      if (have_system) {
        auto op = sys.ops.find(use.op);
        const auto key = pack_shape_key(use.key);
        e.in_system = op != sys.ops.end() && key && efficiency_source_of(op->second, *key) != EfficiencySource::Default;
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
  if (!out.empty()) {
    write_file_atomic(out, text);
    std::fprintf(stderr, "trainsim shapes: wrote %zu shapes to %s\n", doc.shapes.size(), out.c_str());
  } else {
    std::fputs(text.c_str(), stdout);
  }
  if (have_system) {
    bool models = false;
    for (const auto& [name, op] : sys.ops) models = models || op.gemm_model || op.point_model || op.grouped_model;
    std::fprintf(stderr, "trainsim shapes: %zu of %zu shapes have no measurement%s in system '%s'\n", missing,
                 doc.shapes.size(), models ? " or model answer" : "", sys.sys_name.c_str());
  }
  return 0;
}

}  // namespace trainsim::cli
