// A lower bound of a plan's step time from its chunk costs alone, without the pipeline replay:
// what the search's branch and bound needs to skip a plan without estimating it.
#pragma once

#include <cstdint>
#include <vector>

#include "estimate/estimate.h"

namespace trainsim {

/// One pipeline rank's passes of one micro-batch, per virtual chunk: a lower bound of the time
/// each pass keeps the rank's compute stream busy (seconds). bwd_weight: the weight-gradient
/// pass of a split backward (0 otherwise).
struct RankPassBounds {
  std::vector<double> fwd, bwd, bwd_weight;
};

/// A lower bound of the replayed pipeline time (before the straggler factor) of `mbc`
/// micro-batches over the ranks, in order: each rank's compute stream runs every pass of every
/// micro-batch one after the other (its busy time), its first pass waits for a forward on every
/// rank before it (a chunk's forward needs the previous virtual stage's output), and, where its
/// last pass is a backward (`backward_last`: schedules that do not split the backward), a backward
/// on every rank before it follows (the input gradient goes upstream):
///   max over r of  Σ_{q<r} min_c fwd[q][c] + mbc · Σ_c (fwd + bwd + bwd_weight)[r][c]
///                  + Σ_{q<r} min_c bwd[q][c]  (the last sum only with backward_last).
[[nodiscard]] double pipeline_time_lower_bound(const std::vector<RankPassBounds>& ranks, int64_t mbc,
                                               bool backward_last);

/// A lower bound of estimate(plan).iteration_time_s from the chunk costs alone (through `cache`,
/// which the later estimates of the same chunks reuse): the pipeline bound of the plan's passes
/// (a merged step's passes counted by their compute pieces only) times the straggler factor,
/// which stretches the pipeline before the step's tail (DP, optimizer) adds to it.
[[nodiscard]] double step_time_lower_bound(const Plan& plan, EstimateCache* cache = nullptr);

}  // namespace trainsim
