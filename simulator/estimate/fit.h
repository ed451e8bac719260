// The fit verdict: does a stage's predicted memory fit the device? One rule for perf, search,
// validate, serve and --require-fit.
#pragma once

#include <string>

#include "inputs/mode.h"
#include "system/system_config.h"
#include "estimate/estimate.h"

namespace trainsim {

/// FITS: the reserved peak (with the caching allocator's reserve) and the memory outside
/// PyTorch are within the device. TIGHT (default mode): only the allocator's floor
/// (memory/allocator.h: allocated + one 20 MiB segment) is — the run fits if PyTorch's caching
/// allocator frees its cached blocks and retries when cudaMalloc fails, at the cost of those
/// retries. DOES NOT FIT: not even the floor is.
enum class FitState { Fits, Tight, DoesNotFit };
/// "FITS", "TIGHT", "DOES NOT FIT".
[[nodiscard]] const char* fit_state_name(FitState s);

/// What a stage's memory is compared with.
struct FitRule {
  double device_bytes = 0;     // accelerator.mem_gbs
  double unusable_bytes = 0;   // a flat margin outside PyTorch's caching allocator (compat mode, --gmi-error)
  bool use_reserved = true;    // compare the reserved (else the allocated) peak
  /// Subtract each stage's own memory outside PyTorch (StageMemory::non_tensor_bytes: CUDA
  /// context, NCCL buffers; default mode). Off when a flat margin replaces it.
  bool stage_non_tensor = false;
  /// The TIGHT band (default mode, reserved peak compared): a stage whose allocator floor fits
  /// where its reserved peak does not is TIGHT. Off in compat mode (SimuMax's two states).
  bool cache_release = false;
  /// Bytes the caching allocator may hold before a stage's own non-tensor memory: device − margin.
  [[nodiscard]] double limit_bytes() const { return device_bytes - unusable_bytes; }
  /// Bytes a stage's allocator may hold: the limit less the stage's memory outside PyTorch.
  [[nodiscard]] double stage_limit_bytes(const StageMemory& st) const {
    return limit_bytes() - (stage_non_tensor ? st.non_tensor_bytes : 0.0);
  }
  /// The peak compared for FITS: reserved (or allocated, use_reserved false).
  [[nodiscard]] double peak_bytes(const StageMemory& st) const {
    return use_reserved ? st.peak_reserved_bytes : st.peak_alloc_bytes;
  }
  /// The least a stage needs, compared for TIGHT: the allocator floor with the band, else peak_bytes.
  [[nodiscard]] double floor_bytes(const StageMemory& st) const;
  /// The same for a stage's static memory alone (weights, gradients, optimizer states), whose
  /// reserve under this rule is `reserve_scale`: what no smaller micro batch or recompute lowers.
  [[nodiscard]] double static_floor_bytes(double model_bytes, double reserve_scale) const;
};

/// The rule of a system. Compat mode (SimuMax's convention): its device memory less the flat
/// `unusable_mem_gbs` (default 6 GiB), two states. Default mode: its device memory less each
/// stage's memory outside PyTorch (the estimate's non_tensor_bytes: CUDA context + NCCL buffers,
/// or the system's `unusable_mem_gbs` when it gives one), with the TIGHT band. Reserved peak
/// compared.
[[nodiscard]] FitRule fit_rule(const SystemConfig& sys, Mode mode);

struct FitVerdict {
  bool known = false;         // false when the system gives no device memory (mem_gbs 0)
  FitState state = FitState::Fits;
  bool fits = true;           // FITS or TIGHT (what --require-fit, search and validate accept); true when unknown
  double headroom_bytes = 0;  // limit − compared peak, with the allocator's reserve (negative: over by that much)
  /// limit − the floor, without the allocator's reserve (= headroom_bytes where there is no band).
  double floor_headroom_bytes = 0;
  [[nodiscard]] bool tight() const { return known && state == FitState::Tight; }
};

/// Verdict of one stage. Unknown (and fits) when the device memory is 0.
[[nodiscard]] FitVerdict fit_verdict(const StageMemory& st, const FitRule& rule);
/// Verdict of a whole plan: the worst state of its stages, the least headroom of each kind.
[[nodiscard]] FitVerdict fit_verdict(const Estimate& e, const FitRule& rule);
/// The stage with the least headroom (nullptr without stages).
[[nodiscard]] const StageMemory* tightest_stage(const Estimate& e, const FitRule& rule);

/// The one warning line of a TIGHT verdict (without "warning: "), "" otherwise: "TIGHT: fits only
/// if PyTorch's caching allocator frees its cached blocks and retries (num_alloc_retries, each a
/// synchronising cudaFree): headroom -0.52 GiB with the allocator's reserve, +3.52 GiB without".
[[nodiscard]] std::string fit_warning(const FitVerdict& v);

}  // namespace trainsim
