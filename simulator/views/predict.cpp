// Inputs → plan → estimate, shared by perf and serve.
#include "views/predict.h"

#include "estimate/finite.h"

namespace trainsim {

Prediction predict(const PlanRequest& request, const std::string& default_model, const std::string& default_strategy,
                   const ConfigText& system, MfuConvention mfu, Mode mode) {
  PlanRequest r = request;
  r.mode = mode;
  const PlanConfigs pc = build_plan(r, default_model, default_strategy);
  Prediction p;
  PlanInputs& in = p.in;
  in.model = pc.model;
  const ConfigText sys = apply_system_overrides(system, request.overrides);
  in.system = load_system(sys.text, sys.source);
  in.model_source = pc.model_source;
  in.strategy_source = pc.strategy_source;
  in.system_source = sys.source;
  in.mfu = mfu;
  in.notes = pc.notes;
  in.not_modeled = pc.not_modeled;
  in.ignored = pc.ignored;
  in.no_effect = pc.no_effect;
  const PlanSources src{in.model_source, in.strategy_source, in.system_source};
  const Plan plan = resolve_plan(in.model, pc.strategy, in.system, mode, src);
  in.take_plan(plan);
  p.estimate = estimate(plan);
  require_finite(p.estimate, src);
  return p;
}

}  // namespace trainsim
