// The step's tail after the pipeline: optimizer step, compat-mode DP buckets, FLOPs per token.
#include "estimate/tail.h"

#include <algorithm>
#include <cmath>

namespace trainsim::detail {

// Megatron distributed-optimizer step: memory-bound passes over grads and states.
double optimizer_time(const Env& env, double grad_bytes, double state_bytes) {
  const auto io = [&](double b) { return memory_time(*env.classes, b); };
  const double G = grad_bytes, Sst = state_bytes;
  double t = io(G) + io(G);                                   // zero grad buffer, l2 norm
  if (env.s.dp_size() * env.s.cp_size > 1) t += io(2 * G);    // scale before reduce
  const double g_chunk = env.s.grad_reduce_in_bf16 ? Sst / 6 : Sst / 3;  // fp32 grad shard
  t += io(g_chunk) + io(2 * g_chunk) + io(g_chunk + 3 * Sst) + io(1.5 * Sst / 3);
  return t;
}

// Fraction of a rank's optimizer states in host memory (Megatron's optimizer_cpu_offload).
double offloaded_fraction(const StrategyConfig& s) {
  return s.optimizer_cpu_offload ? s.optimizer_offload_fraction : 0;
}

// The optimizer step of one rank. With optimizer_cpu_offload the offloaded share f of the
// parameters is updated on the host (Megatron's HybridDeviceOptimizer): their fp32 gradients go
// D2H (4 B per parameter), a CPU Adam updates fp32 master params, m and v (12 B per parameter at
// host.cpu_adam_gbps), and the updated bf16 params come back H2D (2 B); copies and CPU step run
// one after the other (the d2h/h2d overlap is not modeled). The GPU updates the rest.
double optimizer_step_time(const Env& env, double grad_bytes, double state_bytes) {
  const double f = offloaded_fraction(env.s);
  if (f == 0) return optimizer_time(env, grad_bytes, state_bytes);
  const double params = f * state_bytes / 12;
  return optimizer_time(env, grad_bytes, (1 - f) * state_bytes) + params * (4 + 2) / env.sys.host_link_bytes_per_s +
         params * 12 / env.sys.host_adam_bytes_per_s;
}

// Bucketed gradient reduce-scatter + parameter all-gather (all-reduce without ZeRO), 40M-element
// fp32 buckets as Megatron's DDP.
double dp_time(const Env& env, double rs_bytes, double ag_bytes, const NetworkRef& net, int64_t n,
               const char* stage) {
  if (n <= 1) return 0;
  const double bucket = std::max(40e6, 1e6 * static_cast<double>(n)) * 4;
  const double nrs = rs_bytes > 0 ? std::floor((rs_bytes - 1) / bucket) + 1 : 0;
  double nag = ag_bytes > 0 ? std::floor((ag_bytes - 1) / bucket) + 1 : 0;
  if (env.m.is_moe()) nag *= 2;
  if (env.s.zero_state >= 1)
    return nrs * collective_time(env.sys, env.s, net, Collective::ReduceScatter, bucket, n, stage) +
           nag * collective_time(env.sys, env.s, net, Collective::AllGather, bucket, n, stage);
  return nrs * collective_time(env.sys, env.s, net, Collective::AllReduce, bucket, n, stage);
}

// Model FLOPs per token (6ND-style with full attention and the LM head), as the peer's
// ModelConfig.flops_per_token.
double flops_per_token(const ModelConfig& m, double seq, double vocab) {
  const double L = static_cast<double>(m.layer_num), H = static_cast<double>(m.hidden_size);
  const double h = static_cast<double>(m.head_num), kv = static_cast<double>(m.kv_head_num);
  double qkv, proj, attn;
  if (m.is_mla()) {
    const double dq = static_cast<double>(m.qk_head_dim.value_or(0)), dr = static_cast<double>(m.qk_pos_emb_head_dim.value_or(0));
    const double dv = static_cast<double>(m.v_head_dim.value_or(0)), kvl = static_cast<double>(m.kv_lora_rank.value_or(0));
    if (m.q_lora_rank) {
      const double ql = static_cast<double>(*m.q_lora_rank);
      qkv = H * ql + ql * h * (dq + dr);
    } else {
      qkv = H * h * (dq + dr);
    }
    qkv += H * (kvl + dr) + kvl * h * (dq + dv);
    proj = h * dv * H;
    attn = 6 * L * (seq * (dq + dr) * h + seq * dv * h);
  } else {
    const double d = static_cast<double>(m.head_size.value_or(0));
    qkv = H * d * (h + 2 * kv);
    proj = H * H;  // the peer counts the output projection as H×H even when heads·head_size ≠ H
    attn = 6 * L * 2 * seq * H;
  }
  const double moe_i = static_cast<double>(m.moe_ffn());
  const double mlp = (m.use_swiglu ? 3 : 2) * H * moe_i;
  double f = 1;
  const double topk = static_cast<double>(m.topk.value_or(1));
  if (m.topk) f = 1 + (topk - 1);
  if (m.moe_shared_expert_intermediate_size && moe_i > 0)
    f += static_cast<double>(*m.moe_shared_expert_intermediate_size) / moe_i;
  double total = 6 * L * (qkv + proj) + 6 * L * mlp * f + attn + 6 * H * vocab;
  if (m.topk && *m.topk > 1) total += 6 * L * H * static_cast<double>(m.expert_num);
  return total;
}

}  // namespace trainsim::detail
