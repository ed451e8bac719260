// Megatron's combined 1F1B (`overlap_moe_expert_parallel_comm`, combined_1f1b.py and
// fine_grained_callables.py): the forward of one micro-batch and the backward of another run as
// one merged step, layer by layer, so that each pass's EP all-to-alls sit on a communication
// stream under the other pass's compute.
#pragma once

#include <vector>

#include "engine/engine.h"
#include "model/moe_dispatch.h"

namespace trainsim {

/// One pass of a chunk cut at its EP all-to-alls: piece i is compute[i] (seconds), then the
/// all-to-all a2a[i] (0 for the last piece when the pass ends with compute).
struct A2aPass {
  std::vector<double> compute, a2a;
  /// Appends `seconds` of compute to the open piece.
  void add_compute(double seconds);
  /// Closes the open piece with an all-to-all of `seconds`.
  void add_a2a(double seconds);
  [[nodiscard]] double total() const;
};

/// Ops of a merged step: the first op of each pass (its incoming data dependencies hang there)
/// and the last (what its outgoing transfer waits for).
struct MergedOps {
  Engine::OpId f_first, f_last, b_first, b_last;
};

/// Adds the merged step of forward `f` and backward `b` to `rank`. The compute stream alternates
/// b's piece i and f's piece i (Megatron's order per layer: b_mlp, f_mlp, b_attn, f_attn…), the
/// Ep stream b's all-to-all i and f's all-to-all i; piece i+1 of a pass waits for its all-to-all
/// i. A compute piece beside the other pass's all-to-all of a seconds takes slowdown·min(piece, a)
/// longer: the all-to-all kernel holds its SMs only while it runs.
MergedOps add_merged_step(Engine& e, int32_t rank, const A2aPass& f, Engine::Label f_label, const A2aPass& b,
                          Engine::Label b_label, double slowdown);

/// Compute slow-down beside DeepEP's dispatch or combine kernels (DeepEP Buffer.set_num_sms):
/// they hold `num_sms` of the accelerator's `sm_count` SMs while they run and compute runs on the
/// rest, so it takes 1/(1−u) as long with u = num_sms/sm_count; returns u/(1−u).
[[nodiscard]] double deepep_slowdown(int64_t num_sms, int64_t sm_count);

/// Time of the merged step on an idle rank (seconds).
[[nodiscard]] double merged_step_time(const A2aPass& f, const A2aPass& b, double slowdown);

}  // namespace trainsim
