// Finite-result check of an estimate.
#include "estimate/finite.h"

#include <cmath>

#include "core/error.h"
#include "core/text.h"

namespace trainsim {

void require_finite(const Estimate& e, const PlanSources& src) {
  auto check = [&](const std::string& what, double v) {
    if (std::isfinite(v)) return;
    throw Error(strprintf("the prediction is not finite (%s = %s): a number in the inputs is out of any "
                          "realistic range; check model %s, strategy %s and system %s",
                          what.c_str(), std::isnan(v) ? "nan" : "inf", src.model.c_str(),
                          src.strategy.c_str(), src.system.c_str()));
  };
  check("iteration_time_s", e.iteration_time_s);
  check("mfu", e.mfu);
  check("tflops_per_gpu", e.tflops_per_gpu);
  check("tokens_per_s_per_gpu", e.tokens_per_s_per_gpu);
  for (const auto& st : e.stage_times) check(st.name + " total_s", st.total_s);
  for (const auto& st : e.stages) {
    check(st.name + " peak_alloc_bytes", st.peak_alloc_bytes);
    check(st.name + " peak_reserved_bytes", st.peak_reserved_bytes);
  }
}

}  // namespace trainsim
