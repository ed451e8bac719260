#include "estimate/fit.h"

#include <algorithm>

#include "core/text.h"
#include "core/units.h"
#include "memory/allocator.h"

namespace trainsim {

const char* fit_state_name(FitState s) {
  switch (s) {
    case FitState::Fits: return "FITS";
    case FitState::Tight: return "TIGHT";
    case FitState::DoesNotFit: return "DOES NOT FIT";
  }
  return "?";
}

double FitRule::floor_bytes(const StageMemory& st) const {
  return cache_release && use_reserved ? allocator_floor_bytes(st.peak_alloc_bytes, st.peak_reserved_bytes)
                                       : peak_bytes(st);
}

double FitRule::static_floor_bytes(double model_bytes, double reserve_scale) const {
  return cache_release && use_reserved ? allocator_floor_bytes(model_bytes, model_bytes * reserve_scale)
                                       : model_bytes * reserve_scale;
}

FitRule fit_rule(const SystemConfig& sys, Mode mode) {
  FitRule r;
  r.device_bytes = sys.mem_bytes;
  if (mode == Mode::SimuMax12) {
    r.unusable_bytes = sys.unusable_mem_bytes;
  } else {
    r.stage_non_tensor = true;  // the estimate's terms, or the system's unusable_mem_gbs when given
    r.cache_release = true;
  }
  return r;
}

FitVerdict fit_verdict(const StageMemory& st, const FitRule& rule) {
  FitVerdict v;
  if (rule.device_bytes <= 0) return v;
  v.known = true;
  const double limit = rule.stage_limit_bytes(st);
  v.headroom_bytes = limit - rule.peak_bytes(st);
  v.floor_headroom_bytes = limit - rule.floor_bytes(st);
  v.state = v.headroom_bytes >= 0         ? FitState::Fits
            : v.floor_headroom_bytes >= 0 ? FitState::Tight
                                          : FitState::DoesNotFit;
  v.fits = v.state != FitState::DoesNotFit;
  return v;
}

FitVerdict fit_verdict(const Estimate& e, const FitRule& rule) {
  FitVerdict worst;
  bool first = true;
  for (const auto& st : e.stages) {
    const FitVerdict v = fit_verdict(st, rule);
    if (first) {
      worst = v;
    } else {
      worst.state = std::max(worst.state, v.state);
      worst.headroom_bytes = std::min(worst.headroom_bytes, v.headroom_bytes);
      worst.floor_headroom_bytes = std::min(worst.floor_headroom_bytes, v.floor_headroom_bytes);
    }
    first = false;
  }
  worst.fits = worst.state != FitState::DoesNotFit;
  return worst;
}

const StageMemory* tightest_stage(const Estimate& e, const FitRule& rule) {
  const StageMemory* worst = nullptr;
  for (const auto& st : e.stages)
    if (!worst || fit_verdict(st, rule).headroom_bytes < fit_verdict(*worst, rule).headroom_bytes) worst = &st;
  return worst;
}

std::string fit_warning(const FitVerdict& v) {
  if (!v.tight()) return "";
  return strprintf("TIGHT: fits only if PyTorch's caching allocator frees its cached blocks and retries "
                   "(num_alloc_retries, each a synchronising cudaFree): headroom %+.2f GiB with the allocator's "
                   "reserve, %+.2f GiB without",
                   v.headroom_bytes / kGiB, v.floor_headroom_bytes / kGiB);
}

}  // namespace trainsim
