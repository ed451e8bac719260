// The fit verdict: does a stage's predicted memory fit the device? One rule for perf, search and
// --require-fit.
#pragma once

#include "inputs/mode.h"
#include "system/system_config.h"
#include "estimate/estimate.h"

namespace trainsim {

/// What a stage's memory is compared with.
struct FitRule {
  double device_bytes = 0;     // accelerator.mem_gbs
  double unusable_bytes = 0;   // a flat margin outside PyTorch's caching allocator (compat mode, --gmi-error)
  bool use_reserved = true;    // compare the reserved (else the allocated) peak
  /// Subtract each stage's own memory outside PyTorch (StageMemory::non_tensor_bytes: CUDA
  /// context, NCCL buffers; default mode). Off when a flat margin replaces it.
  bool stage_non_tensor = false;
  /// Bytes the caching allocator may hold before a stage's own non-tensor memory: device − margin.
  [[nodiscard]] double limit_bytes() const { return device_bytes - unusable_bytes; }
  /// Bytes a stage's allocator may hold: the limit less the stage's memory outside PyTorch.
  [[nodiscard]] double stage_limit_bytes(const StageMemory& st) const {
    return limit_bytes() - (stage_non_tensor ? st.non_tensor_bytes : 0.0);
  }
};

/// The rule of a system. Compat mode (SimuMax's convention): its device memory less the flat
/// `unusable_mem_gbs` (default 6 GiB). Default mode: its device memory less each stage's memory
/// outside PyTorch (the estimate's non_tensor_bytes: CUDA context + NCCL buffers, or the
/// system's `unusable_mem_gbs` when it gives one). Reserved peak compared.
[[nodiscard]] FitRule fit_rule(const SystemConfig& sys, Mode mode);

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
