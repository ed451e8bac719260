// A lower bound of a plan's step time and its memory from its chunk costs and its program, without
// the pipeline replay: what the search's branch and bound needs to skip a plan without
// estimating it.
#pragma once

#include <cstdint>
#include <vector>

#include "estimate/estimate.h"
#include "schedule/grad_buckets.h"

namespace trainsim {

/// One pipeline rank's passes of one micro-batch, per virtual chunk: a lower bound of the time
/// each pass keeps the rank's compute stream busy (seconds). bwd_weight: the weight-gradient
/// pass of a split backward (0 otherwise); a2a: the EP all-to-alls of the forward and backward
/// that a merged step runs on the EP stream instead (overlap_moe_expert_parallel_comm, else 0).
struct RankPassBounds {
  std::vector<double> fwd, bwd, bwd_weight, a2a;
  /// A lower bound of the compute stream's busy time over every micro-batch when known otherwise
  /// (the program's merged steps walked), else 0.
  double busy = 0;
};

/// A lower bound of the replayed pipeline time (before the straggler factor) of `mbc`
/// micro-batches over the ranks, in order: each rank's compute stream runs every pass of every
/// micro-batch one after the other (its busy time), its first pass waits for a forward on every
/// rank before it (a chunk's forward needs the previous virtual stage's output), and, where its
/// last pass is a backward (`backward_last`: schedules that do not split the backward), a backward
/// on every rank before it follows (the input gradient goes upstream):
///   max over r of  Σ_{q<r} min_c fwd[q][c] + mbc · Σ_c (fwd + bwd + bwd_weight)[r][c]
///                  + Σ_{q<r} min_c bwd[q][c]  (the last sum only with backward_last).
/// With merged steps a pass's all-to-alls run either on the compute stream (unmerged) or on the
/// EP stream, whose every op a compute piece of the same rank waits for: one of the two streams
/// is busy for at least half of their sum, mbc · Σ_c (fwd + bwd + bwd_weight + a2a)[r][c] / 2.
/// A rank's `busy`, where larger than its mbc · Σ_c (fwd + bwd + bwd_weight), replaces it.
[[nodiscard]] double pipeline_time_lower_bound(const std::vector<RankPassBounds>& ranks, int64_t mbc,
                                               bool backward_last);

/// The seconds of every data-parallel collective a rank's dp stream runs in one step (default
/// mode), as schedule/dp_lowering.cpp puts them there: per chunk and side (dense over dp·cp,
/// experts over edp), the parameter all-gather of each bucket (distributed optimizer), FSDP's
/// all-gather before every forward and backward (optim_grads_params), and the gradient
/// reduction of each bucket after the last backward, or after every backward with sharded
/// gradients. `backward`: each chunk's backward segments (chunk order).
[[nodiscard]] double dp_stream_seconds(const Plan& plan, const NetworkChoice& nets, int64_t r,
                                       const std::vector<const BackwardSegments*>& backward);

/// What one estimate's figures are at least (time) or exactly (memory), without the replay.
struct PlanBound {
  /// ≤ estimate(plan).iteration_time_s: a rank's optimizer step (estimate/tail.cpp) after the
  /// larger of the pipeline bound of the plan's passes times the straggler factor (the tail
  /// starts at the stretched pipeline's end) and (default mode) the rank's dp-stream seconds.
  double time_s = 0;
  /// Each rank's dp_stream_seconds (default mode; empty in compat mode).
  std::vector<double> dp_stream_s;
  /// The estimate's stages, in its order (the reported ranks), with the estimate's memory: the
  /// static part, peak_alloc_bytes, peak_reserved_bytes and non_tensor_bytes (memory reads no
  /// time: 1F1B's micro-batches in flight in closed form, else estimate/stage_memory.cpp over the
  /// program's steps).
  std::vector<StageMemory> stages;
};

/// The bounds of `plan`, through `cache` (which the later estimates of the same chunks reuse);
/// `time` false: the stages only (time_s 0).
[[nodiscard]] PlanBound plan_lower_bound(const Plan& plan, EstimateCache* cache = nullptr, bool time = true);

}  // namespace trainsim
