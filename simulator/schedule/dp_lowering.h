// Data-parallel traffic lowered onto the engine (default mode): Megatron's DDP gradient buckets
// per model chunk, their reduce-scatter / all-reduce on the dp stream where the backward
// produces them, the parameter all-gather, and FSDP's per-step gathers.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/small_vector.h"
#include "engine/engine.h"
#include "plan/plan.h"
#include "schedule/grad_buckets.h"
#include "schedule/lower.h"
#include "schedule/program.h"

namespace trainsim {

// Data-parallel traffic of one rank put on its dp stream (default mode), and what stays after
// the pipeline.
struct RankDp {
  double dense_s = 0, moe_s = 0;  // every DP / EDP collective of the step
  double after_optimizer_s = 0;   // parameter all-gather after the optimizer (no overlap_param_gather)
  double param_gather_first_s = 0;  // the all-gather bucket the first forward waits for
  // The collectives timed, per kind (Collective) and how (EfficiencySource: Default = formula).
  std::array<std::array<int64_t, 4>, 5> collectives{};
};

// The data-parallel groups a rank reduces its gradients over: dense (dp·cp) and expert (edp).
struct DpSide {
  bool moe;
  Group group;
  const char* stage;
  [[nodiscard]] int64_t n(const Plan& plan) const { return moe ? plan.par.edp : plan.par.dp * plan.par.cp; }
};
inline constexpr DpSide kDpSides[] = {{false, Group::DP, "dp_cp"}, {true, Group::EDP, "edp"}};

// Gradient buckets of each chunk of a rank and side (dense, expert): the same for every replay
// of the rank's program, filled once per estimate.
using ChunkBuckets = std::vector<std::array<std::vector<GradBucket>, 2>>;
// The backward of each of a rank's chunks (in chunk order), in backward order.
using RankBackward = SmallVector<const BackwardSegments*, 8>;

[[nodiscard]] ChunkBuckets chunk_buckets_of(const Plan& plan, bool split_backward, int64_t r,
                                            const RankBackward& backward_of);

// Megatron's DDP buckets on the dp stream: per model chunk, gradient buckets in backward order
// whose reduce-scatter (distributed optimizer) or all-reduce starts where the last micro-batch's
// backward has produced the bucket's gradients (overlap_grad_reduce) or after the rank's last
// backward (finalize_model_grads); with overlap_param_gather the parameter all-gather of each
// bucket runs at the start of the step, in forward order, and each chunk's first forward waits
// for its first bucket (Megatron's forward pre-hook; later buckets are taken to keep ahead of
// the forward).
RankDp add_dp_ops(Engine& e, const Plan& plan, const NetworkChoice& nets, const Program& program, const StepOps& ops,
                  int64_t r, const RankBackward& backward_of, const ChunkBuckets& chunk_buckets);

}  // namespace trainsim
