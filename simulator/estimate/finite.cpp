// Finite-result check of an estimate.
#include "estimate/finite.h"

#include <cmath>

#include "core/error.h"
#include "core/text.h"

namespace trainsim {

void require_finite(const Estimate& e, const PlanSources& src) {
  // The name is formed only for a failure: this runs after every estimate of a batch.
  auto check = [&](const std::string& stage, const char* what, double v) {
    if (std::isfinite(v)) return;
    const std::string name = stage.empty() ? what : stage + " " + what;
    throw Error(strprintf("the prediction is not finite (%s = %s): a number in the inputs is out of any "
                          "realistic range; check model %s, strategy %s and system %s",
                          name.c_str(), std::isnan(v) ? "nan" : "inf", src.model.c_str(),
                          src.strategy.c_str(), src.system.c_str()));
  };
  static const std::string none;
  check(none, "iteration_time_s", e.iteration_time_s);
  check(none, "mfu", e.mfu);
  check(none, "tflops_per_gpu", e.tflops_per_gpu);
  check(none, "tokens_per_s_per_gpu", e.tokens_per_s_per_gpu);
  for (const auto& st : e.stage_times) check(st.name, "total_s", st.total_s);
  for (const auto& st : e.stages) {
    check(st.name, "peak_alloc_bytes", st.peak_alloc_bytes);
    check(st.name, "peak_reserved_bytes", st.peak_reserved_bytes);
  }
}

}  // namespace trainsim
