// The fit verdict: does a stage's predicted memory fit the device? One rule for perf, search and
// --require-fit.
#pragma once

#include "config/system_config.h"
#include "estimate/estimate.h"

namespace trainsim {

/// What a stage's memory is compared with.
struct FitRule {
  double device_bytes = 0;     // accelerator.mem_gbs
  double unusable_bytes = 0;   // memory outside PyTorch's caching allocator (CUDA context, NCCL)
  bool use_reserved = true;    // compare the reserved (else the allocated) peak
  /// Bytes the caching allocator may hold: device − unusable.
  [[nodiscard]] double limit_bytes() const { return device_bytes - unusable_bytes; }
};

/// The rule of a system: its device memory and its `unusable_mem_gbs`, reserved peak compared.
[[nodiscard]] FitRule fit_rule(const SystemConfig& sys);

struct FitVerdict {
  bool known = false;         // false when the system gives no device memory (mem_gbs 0)
  bool fits = true;           // true when unknown
  double headroom_bytes = 0;  // limit − compared peak (negative: over by that much)
};

/// Verdict of one stage: fits when the compared peak is at most the limit.
/// Unknown (and fits) when the device memory is 0.
[[nodiscard]] FitVerdict fit_verdict(const StageMemory& st, const FitRule& rule);
/// Verdict of a whole plan: the stage with the least headroom.
[[nodiscard]] FitVerdict fit_verdict(const Estimate& e, const FitRule& rule);

}  // namespace trainsim
