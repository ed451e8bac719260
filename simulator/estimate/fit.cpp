#include "estimate/fit.h"

#include <algorithm>

namespace trainsim {

FitRule fit_rule(const SystemConfig& sys, Mode mode) {
  FitRule r;
  r.device_bytes = sys.mem_bytes;
  if (mode == Mode::SimuMax12) {
    r.unusable_bytes = sys.unusable_mem_bytes;
  } else {
    r.stage_non_tensor = true;  // the estimate's terms, or the system's unusable_mem_gbs when given
  }
  return r;
}

FitVerdict fit_verdict(const StageMemory& st, const FitRule& rule) {
  const double peak = rule.use_reserved ? st.peak_reserved_bytes : st.peak_alloc_bytes;
  FitVerdict v;
  if (rule.device_bytes <= 0) return v;
  v.known = true;
  v.headroom_bytes = rule.stage_limit_bytes(st) - peak;
  v.fits = v.headroom_bytes >= 0;
  return v;
}

FitVerdict fit_verdict(const Estimate& e, const FitRule& rule) {
  FitVerdict worst;
  bool first = true;
  for (const auto& st : e.stages) {
    const FitVerdict v = fit_verdict(st, rule);
    if (first || v.headroom_bytes < worst.headroom_bytes) worst = v;
    first = false;
  }
  return worst;
}

}  // namespace trainsim
