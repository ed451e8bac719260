// A timeline step (micro-batch × chunk × pass) expanded into its ops, and the memory a rank holds
// over the step: what the trace, the memory timeline and the HTML report draw. The ops come from
// the estimate's chunk costs (Estimate::ranks), scaled so that they tile the step exactly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "estimate/estimate.h"
#include "timeline/timeline.h"

namespace trainsim {

/// Part of a pass an op slice belongs to.
enum class OpPhase : uint8_t { Forward, Recompute, Backward, BackwardInput, BackwardWeight };
[[nodiscard]] const char* op_phase_name(OpPhase p);

/// One op of one step: its kernels run in [start, split), its collectives in [split, end).
struct OpSlice {
  const OpCost* op = nullptr;
  OpPhase phase = OpPhase::Forward;
  double start = 0, split = 0, end = 0;  // seconds from the start of the step
  double flops = 0;                      // of this phase
};

/// Whether the event is a compute pass (forward or a backward kind) that expands into ops.
[[nodiscard]] bool is_pass(const TimelineEvent& ev);

/// The ops of a pass event in execution order (forward: call order; backward: reverse order, a
/// recomputed layer's forward right before its backward). Empty for other events or when the
/// estimate has no rank profiles. Zero-length slices are left out.
[[nodiscard]] std::vector<OpSlice> expand_step(const Estimate& e, const TimelineEvent& ev);

/// Allocated memory of one rank after an op or step.
struct MemoryPoint {
  double time = 0;       // seconds from the start of the step
  double bytes = 0;      // model state + saved activations of the micro-batches in flight
  std::string what;      // op or step that ended
  int32_t chunk = -1, mb = -1;
};

/// A rank's allocated memory over the step: static model state plus the activations each forward
/// saves (op by op, in proportion to the ops' saved bytes, summing to the chunk's per-micro-batch
/// cache), freed by the backward that consumes them (the weight-gradient pass when split).
/// Micro-batches in [detail, micro_batches − detail) are stepped once per pass instead of per op
/// (a negative detail expands every step).
struct MemoryTrack {
  std::vector<MemoryPoint> points;
  double peak_bytes = 0, peak_time = 0;
  std::vector<std::pair<int32_t, int32_t>> live_at_peak;  // (chunk, micro-batch) held at the peak
};
[[nodiscard]] MemoryTrack memory_track(const Estimate& e, int32_t rank, int64_t detail);

/// Whether micro-batch `mb` is drawn op by op under `detail` (see memory_track).
[[nodiscard]] bool expanded_micro_batch(int64_t mb, int64_t micro_batches, int64_t detail);

}  // namespace trainsim
