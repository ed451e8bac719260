// The step's tail after the pipeline: optimizer step, compat-mode DP buckets, FLOPs per token.
#include "estimate/tail.h"

#include "estimate/stages.h"

#include <algorithm>
#include <cmath>

namespace trainsim::detail {

// Megatron distributed-optimizer step: memory-bound passes over grads and states.
double optimizer_time(const Env& env, double grad_bytes, double state_bytes) {
  const auto io = [&](double b) { return memory_time(*env.classes, b); };
  const double G = grad_bytes, Sst = state_bytes;
  double t = io(G) + io(G);                                   // zero grad buffer, l2 norm
  if (env.s.par.dp * env.s.par.cp > 1) t += io(2 * G);    // scale before reduce
  const double g_chunk = env.s.prec.grad_reduce_in_bf16 ? Sst / 6 : Sst / 3;  // fp32 grad shard
  t += io(g_chunk) + io(2 * g_chunk) + io(g_chunk + 3 * Sst) + io(1.5 * Sst / 3);
  return t;
}

// Fraction of a rank's optimizer states in host memory (Megatron's optimizer_cpu_offload).
double offloaded_fraction(const Settings& s) {
  return s.off.optimizer ? s.off.optimizer_fraction : 0;
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
  const auto calls = [&](double count, Collective kind) {
    EfficiencySource how;
    const double t = collective_time(env.sys, env.s, net, kind, bucket, n, stage, &how);
    if (env.log && count > 0) env.log->collective(kind, how);
    return count * t;
  };
  if (env.s.ovl.zero_state >= 1) return calls(nrs, Collective::ReduceScatter) + calls(nag, Collective::AllGather);
  return calls(nrs, Collective::AllReduce);
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

void step_tail(const Plan& plan, const Env& env, ChunkResults& results, const PipelineRun& run, bool events,
               Estimate& est, StepTail& tail) {
  const ModelConfig& m = *plan.model;
  const Settings& s = plan;
  const SystemConfig& sys = *plan.system;
  const NetworkChoice& nets = env.nets;
  const int64_t pp = plan.par.pp;
  const bool scheduled_dp = plan.mode == Mode::Default;
  const auto& dp_ops = run.dp;
  if (env.log)
    for (const RankDp& d : dp_ops)
      for (size_t c = 0; c < kCollectiveKinds; ++c)
        for (size_t h = 0; h < 4; ++h) env.log->collectives[c][h] += d.collectives[c][h];
  const double pipe = run.pipe;
  // DP communication, optimizer and the straggler allowance after the pipeline, per rank.
  for (auto* x : {&tail.dp, &tail.dense_dp, &tail.edp, &tail.optim, &tail.exposed_dp}) x->assign(static_cast<size_t>(pp), 0);
  double* const rank_dp = tail.dp.begin();
  double* const rank_dense_dp = tail.dense_dp.begin();
  double* const rank_edp = tail.edp.begin();
  double* const rank_optim = tail.optim.begin();
  double* const rank_exposed_dp = tail.exposed_dp.begin();
  SmallVector<const ChunkResult*, 8>& whole = tail.whole;
  whole.assign(static_cast<size_t>(pp), nullptr);
  for (int64_t r = 0; r < pp; ++r) {
    const auto ri = static_cast<size_t>(r);
    whole[ri] = &results.get(rank_spec(plan, r));
    // Ranks holding the same layers (the middle ones) have the same DP and optimizer costs.
    const bool same = r > 0 && whole[ri] == whole[ri - 1];
    const StaticMemory sm = shard_static_memory(whole[ri]->params, s);
    const double mg = (s.prec.grad_reduce_in_bf16 || !s.prec.fp32_accum_grad) ? 2 : 4;
    if (scheduled_dp) {
      rank_edp[ri] = dp_ops[ri].moe_s;
      rank_dense_dp[ri] = dp_ops[ri].dense_s;
    } else if (same) {
      rank_edp[ri] = rank_edp[ri - 1];
      rank_dense_dp[ri] = rank_dense_dp[ri - 1];
    } else {
      // SimuMax v1.2 (_compute_dp_time) sizes the reduce-scatter from its module gradient bytes,
      // which ZeRO >= 2 has already divided by dp·cp (experts: edp): the sharded gradient.
      const bool zero2 = s.ovl.zero_state >= 2;
      const double moe_grad = zero2 ? sm.moe_grad : sm.moe_params * mg;
      const double dense_grad = zero2 ? sm.grad : sm.dense_params * mg;
      const double pe = s.prec.element_bytes();  // the parameters in the training dtype (numel·elem)
      rank_edp[ri] = dp_time(env, moe_grad, moe_grad / mg * pe, nets.net(Group::EDP), plan.par.edp, "edp");
      rank_dense_dp[ri] = dp_time(env, dense_grad, dense_grad / mg * pe, nets.net(Group::DP), plan.par.dp * plan.par.cp, "dp_cp");
    }
    rank_dp[ri] = rank_dense_dp[ri] + rank_edp[ri];
    rank_optim[ri] = same ? rank_optim[ri - 1] : optimizer_step_time(env, sm.grad + sm.moe_grad, sm.state + sm.moe_state);
    // The host model: Megatron reads the gradient norm on the host (clip_grad, on by default, and
    // check_for_nan_in_loss_and_grad) before it launches the update, so the device idles for the
    // read and the first launch once per step.
    if (!same && plan.mode == Mode::Default && sys.host_framework)
      rank_optim[ri] += sys.host_framework->sync_s + sys.host_framework->eager_op_s;
  }
  // Megatron's embedding group: with pp > 1 the first stage's embedding and the last stage's copy
  // (a tied output layer, or the MTP lookups) all-reduce their gradients after the backward
  // (_allreduce_word_embedding_grads), over the pipeline network. Default mode only.
  if (plan.mode == Mode::Default && pp > 1 && (m.tie_word_embeddings || m.mtp_num_layers > 0)) {
    const double mg = (s.prec.grad_reduce_in_bf16 || !s.prec.fp32_accum_grad) ? 2 : 4;
    const double grad = static_cast<double>(plan.padded_vocab) / static_cast<double>(plan.par.tp) *
                        static_cast<double>(m.hidden_size) * mg;
    const double t = collective_time(sys, s, nets.net(Group::PP), Collective::AllReduce, grad, 2, "pp");
    for (size_t ri : {size_t{0}, static_cast<size_t>(pp - 1)}) {
      rank_dp[ri] += t;
      rank_dense_dp[ri] += t;
    }
  }
  // After the pipeline (stretched by the straggler allowance): the DP traffic still running (all
  // of it in compat mode), the optimizer, and the parameter all-gather when it follows the step.
  const double tail_start = pipe * plan.straggler.ratio;
  for (int64_t r = 0; r < pp; ++r) {
    const auto rr = static_cast<int32_t>(r);
    const auto ri = static_cast<size_t>(r);
    const double dp_tail =
        scheduled_dp ? std::max(0.0, est.timeline.totals[ri].stream_end[static_cast<size_t>(Stream::Dp)] - pipe)
                     : rank_dp[ri];
    const double after = dp_ops[ri].after_optimizer_s;
    rank_exposed_dp[ri] = dp_tail + after + (scheduled_dp ? dp_ops[0].param_gather_first_s : 0);
    const double optim_start = tail_start + dp_tail;
    const double end = optim_start + rank_optim[ri] + after;
    est.timeline.totals[ri].end = std::max(est.timeline.totals[ri].end, end);
    if (!events) continue;
    auto& ev = est.timeline.events;
    if (tail_start > pipe) ev.push_back({rr, Stream::Compute, StepKind::Straggler, -1, -1, pipe, tail_start});
    if (!scheduled_dp && rank_dp[ri] > 0)
      ev.push_back({rr, Stream::Dp, StepKind::DpComm, -1, -1, tail_start, tail_start + rank_dp[ri]});
    ev.push_back({rr, Stream::Compute, StepKind::Optimizer, -1, -1, optim_start, optim_start + rank_optim[ri]});
    if (after > 0) ev.push_back({rr, Stream::Dp, StepKind::DpComm, -1, -1, end - after, end});
  }
  est.iteration_time_s = est.timeline.span();

}

}  // namespace trainsim::detail
