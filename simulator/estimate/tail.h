// The step's tail after the pipeline: the optimizer step (with CPU offload), the bucketed DP
// traffic of the compat mode, and the model FLOPs per token. Internal to estimate/.
#pragma once

#include "estimate/chunk_cost.h"

namespace trainsim::detail {

// Megatron distributed-optimizer step: memory-bound passes over grads and states.
[[nodiscard]] double optimizer_time(const Env& env, double grad_bytes, double state_bytes);
// Fraction of a rank's optimizer states in host memory (Megatron's optimizer_cpu_offload).
[[nodiscard]] double offloaded_fraction(const Settings& s);
// The optimizer step of one rank, its host-offloaded share included.
[[nodiscard]] double optimizer_step_time(const Env& env, double grad_bytes, double state_bytes);
// Bucketed gradient reduce-scatter + parameter all-gather (all-reduce without ZeRO).
[[nodiscard]] double dp_time(const Env& env, double rs_bytes, double ag_bytes, const NetworkRef& net, int64_t n,
                             const char* stage);
// Model FLOPs per token, as the peer's ModelConfig.flops_per_token.
[[nodiscard]] double flops_per_token(const ModelConfig& m, double seq, double vocab);

}  // namespace trainsim::detail
