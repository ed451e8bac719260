// Step estimate of a resolved plan: chunk costs (op graph) → schedule program lowered onto the
// engine → timeline → DP, optimizer and straggler tail → MFU, and the per-stage memory peaks
// (in compat mode exactly the peer's PerfLLM analysis_cost / analysis_mem).
#include "estimate/estimate.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <unordered_map>

#include "comm/collective.h"
#include "compute/cost.h"
#include "core/error.h"
#include "core/units.h"
#include "memory/activation.h"
#include "model/context_parallel.h"
#include "model/graph.h"
#include "model/moe_dispatch.h"
#include "schedule/lower.h"
#include "schedule/program.h"

namespace trainsim {

double StageTime::exposed_comm_s(size_t group) const {
  const double total = comm_by_group_s[group];
  return group == static_cast<size_t>(Group::PP) ? std::min(total, p2p_wait_s) : total;
}

double Estimate::peak_alloc_bytes() const {
  double m = 0;
  for (const auto& s : stages) m = std::max(m, s.peak_alloc_bytes);
  return m;
}

double Estimate::peak_reserved_bytes() const {
  double m = 0;
  for (const auto& s : stages) m = std::max(m, s.peak_reserved_bytes);
  return m;
}

namespace {

struct Env {
  const ModelConfig& m;
  const StrategyConfig& s;
  const SystemConfig& sys;
  const NetworkChoice& nets;
  EfficiencyLog* log;
};

// Per-micro-batch times of a set of leaves (seconds).
struct PhaseSums {
  double fwd = 0, bwd = 0, recompute = 0;          // compute (bwd: input + weight gradients)
  double fwd_net = 0, bwd_net = 0, recompute_net = 0;
  double bwd_w = 0, bwd_w_net = 0;                 // the weight-gradient part of bwd / bwd_net
  std::array<double, kGroupCount> net_by_group{};  // all phases' collectives, by parallel group
  void add(const PhaseSums& o, double k = 1) {
    for (size_t g = 0; g < net_by_group.size(); ++g) net_by_group[g] += o.net_by_group[g] * k;
    fwd += o.fwd * k;
    bwd += o.bwd * k;
    recompute += o.recompute * k;
    fwd_net += o.fwd_net * k;
    bwd_net += o.bwd_net * k;
    recompute_net += o.recompute_net * k;
    bwd_w += o.bwd_w * k;
    bwd_w_net += o.bwd_w_net * k;
  }
  /// Per-micro-batch pass times: recompute runs in the backward; a split backward leaves the
  /// weight gradients (and their collectives) to a pass of their own.
  [[nodiscard]] ChunkTimes times(bool split) const {
    ChunkTimes t;
    t.fwd = fwd + fwd_net;
    t.bwd = bwd + bwd_net + recompute + recompute_net;
    if (split) {
      t.bwd_weight = bwd_w + bwd_w_net;
      t.bwd -= t.bwd_weight;
    }
    return t;
  }
};

// Sum of the calls' times; each is also added to `by_group` (`repeat` times).
double comm_sum(const Env& env, const std::vector<CommCall>& calls, std::array<double, kGroupCount>& by_group,
                int repeat = 1) {
  double t = 0;
  for (const auto& c : calls) {
    const double x = collective_time(env.sys, env.s, env.nets.of(c.group), c.kind, c.bytes, c.n, c.stage);
    t += x;
    by_group[static_cast<size_t>(c.group)] += repeat * x;
  }
  return t;
}

PhaseSums leaf_sums(const Env& env, const Leaf& l, bool recomputed) {
  PhaseSums p;
  double t[3] = {0, 0, 0};
  for (int ph = 0; ph < 3; ++ph)
    for (const auto& k : l.kernels[ph]) t[ph] += kernel_time(env.sys, k, env.log);
  p.fwd = t[kFwd];
  p.bwd = t[kBwdAct] + t[kBwdW];
  p.bwd_w = t[kBwdW];
  const bool recompute = recomputed && l.recompute && !l.variance && env.s.enable_recompute;
  const bool repeats = recompute && l.recompute_repeats_comm;
  p.fwd_net = comm_sum(env, l.comms[kFwd], p.net_by_group, repeats ? 2 : 1);
  p.bwd_w_net = comm_sum(env, l.comms[kBwdW], p.net_by_group);
  p.bwd_net = comm_sum(env, l.comms[kBwdAct], p.net_by_group) + p.bwd_w_net;
  if (recompute) {
    p.recompute = p.fwd;
    if (l.recompute_repeats_comm) p.recompute_net = p.fwd_net;
  }
  if (l.ring_steps > 1) {
    // Ring attention: each step's KV exchange hides under the previous step's blockwise
    // attention; only what sticks out is added. The backward circulates dK, dV with K, V and
    // returns the last dK, dV to its owner (TE AttnFuncWithCPAndKVP2P).
    const std::string& net = env.nets.of(Group::CP);
    const auto exchange = [&](double bytes) {
      return collective_time(env.sys, env.s, net, Collective::P2P, bytes, l.ring_steps, "cp");
    };
    const double n = static_cast<double>(l.ring_steps), kv = exchange(l.ring_block_bytes);
    const double fwd_x = std::max(0.0, ring_pass_time(l.ring_steps, t[kFwd] / n, kv, 0) - t[kFwd]);
    const double bwd_x = std::max(
        0.0, ring_pass_time(l.ring_steps, t[kBwdAct] / n, exchange(2 * l.ring_block_bytes), kv) - t[kBwdAct]);
    p.fwd_net += fwd_x;
    p.bwd_net += bwd_x;
    if (recompute) p.recompute_net += fwd_x;
    p.net_by_group[static_cast<size_t>(Group::CP)] += (recompute ? 2 : 1) * fwd_x + bwd_x;
  }
  return p;
}

// moe_shared_expert_overlap (Megatron SharedExpertMLP on its own stream): the shared expert's
// compute runs while the dispatch and combine all-to-alls of the same layer are in flight, so
// min(shared compute, EP communication) of each pass is hidden.
void overlap_shared_expert(const Env& env, const LayerTemplate& t, PhaseSums& ps) {
  double shared[2] = {0, 0}, dispatch[2] = {0, 0};
  std::array<double, kGroupCount> unused{};
  for (const auto& l : t.leaves) {
    if (l.name.rfind("shared_expert.", 0) == 0) {
      const PhaseSums p = leaf_sums(env, l, false);
      shared[0] += p.fwd;
      shared[1] += p.bwd;
    }
    if (l.name != "permutation" && l.name != "unpermutation") continue;
    for (int ph : {kFwd, kBwdAct})
      for (const auto& call : l.comms[ph])
        if (call.group == Group::EP) dispatch[ph == kFwd ? 0 : 1] += comm_sum(env, {call}, unused);
  }
  const double hidden_f = std::min(shared[0], dispatch[0]), hidden_b = std::min(shared[1], dispatch[1]);
  ps.fwd_net -= hidden_f;
  ps.bwd_net -= hidden_b;
  ps.net_by_group[static_cast<size_t>(Group::EP)] -= hidden_f + hidden_b;
}

PhaseSums chunk_sums(const Env& env, const Chunk& c) {
  PhaseSums total;
  for (const auto& l : c.pre) total.add(leaf_sums(env, l, false));
  for (const auto& l : c.post) total.add(leaf_sums(env, l, false));
  // Layers sharing a template cost the same; a recomputed template's leaves carry their roles.
  std::vector<PhaseSums> per_template;
  for (const auto& t : c.templates) {
    PhaseSums ps;
    for (const auto& l : t.leaves) ps.add(leaf_sums(env, l, true));
    if (t.moe && env.s.moe_shared_expert_overlap) overlap_shared_expert(env, t, ps);
    per_template.push_back(ps);
  }
  for (const auto& L : c.layers) total.add(per_template[static_cast<size_t>(L.template_index)]);
  return total;
}

// Megatron distributed-optimizer step: memory-bound passes over grads and states.
double optimizer_time(const Env& env, double grad_bytes, double state_bytes) {
  const auto io = [&](double b) { return memory_time(env.sys, b); };
  const double G = grad_bytes, Sst = state_bytes;
  double t = io(G) + io(G);                                   // zero grad buffer, l2 norm
  if (env.s.dp_size() * env.s.cp_size > 1) t += io(2 * G);    // scale before reduce
  const double g_chunk = env.s.grad_reduce_in_bf16 ? Sst / 6 : Sst / 3;  // fp32 grad shard
  t += io(g_chunk) + io(2 * g_chunk) + io(g_chunk + 3 * Sst) + io(1.5 * Sst / 3);
  return t;
}

// Bucketed gradient reduce-scatter + parameter all-gather (all-reduce without ZeRO), 40M-element
// fp32 buckets as Megatron's DDP.
double dp_time(const Env& env, double rs_bytes, double ag_bytes, const std::string& net, int64_t n,
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

// Everything the estimate needs from one chunk.
struct ChunkResult {
  PhaseSums sums;
  ActivationResult act;
  StaticMemory params;
  double dummy_bytes = 0;
  std::vector<EfficiencyLog::Miss> misses;
  int64_t hits = 0;
};

ChunkResult evaluate_chunk(const Env& env, const ChunkSpec& spec, int64_t padded_vocab, const ChunkEnv& chunk_env) {
  const Chunk chunk = build_chunk(env.m, env.s, padded_vocab, spec, chunk_env);
  EfficiencyLog log;
  Env local = env;
  local.log = &log;
  ChunkResult r;
  r.sums = chunk_sums(local, chunk);
  r.act = walk_activations(chunk, env.s);
  r.params = chunk_parameters(chunk);
  std::vector<std::array<int64_t, 3>> shapes;
  collect_dummy_wgrad(chunk, shapes);
  for (const auto& sh : shapes) r.dummy_bytes += static_cast<double>(sh[0]) * static_cast<double>(sh[1]) * 2;
  r.misses = std::move(log.misses);
  r.hits = log.hits;
  return r;
}

}  // namespace

struct EstimateCache::Impl {
  std::optional<ModelConfig> model;  // compared by content on every call
  uint64_t system_hash = 0;
  std::unordered_map<std::string, ChunkResult> chunks;
  int64_t hits = 0, misses = 0;
};

EstimateCache::EstimateCache() : impl_(std::make_unique<Impl>()) {}
EstimateCache::~EstimateCache() = default;
EstimateCache::EstimateCache(const EstimateCache&) : impl_(std::make_unique<Impl>()) {}
EstimateCache& EstimateCache::operator=(const EstimateCache&) {
  impl_ = std::make_unique<Impl>();
  return *this;
}
int64_t EstimateCache::hits() const { return impl_->hits; }
int64_t EstimateCache::misses() const { return impl_->misses; }

namespace {

// Chunk results of one estimate: each distinct spec evaluated once, through the cache when given.
class ChunkResults {
 public:
  ChunkResults(const Env& env, const Plan& plan, EstimateCache* cache)
      : env_(env),
        plan_(plan),
        cache_(cache),
        chunk_env_{env.sys.num_per_node, moe_load_imbalance(env.m, env.s, plan.mode), plan.mode} {
    if (!cache_) return;
    EstimateCache::Impl& c = cache_->impl();
    const uint64_t sh = content_hash(env.sys);
    if (!c.model || !(*c.model == env.m) || c.system_hash != sh) {
      c.chunks.clear();
      c.model = env.m;
      c.system_hash = sh;
    }
    const uint64_t strategy = chunk_strategy_hash(env.s);
    base_key_.append(reinterpret_cast<const char*>(&strategy), sizeof strategy);
    base_key_ += mode_name(plan.mode);
    // Leaves communicate over these groups only (a test checks every preset's leaves).
    for (Group g : kChunkGroups) {
      base_key_ += plan.nets.of(g);
      base_key_ += '\0';
    }
  }

  const ChunkResult& get(const ChunkSpec& spec) {
    for (const auto& [sp, r] : seen_)
      if (sp == spec) return *r;
    const ChunkResult* r = nullptr;
    if (!cache_) {
      local_.push_back(std::make_unique<ChunkResult>(evaluate_chunk(env_, spec, plan_.padded_vocab, chunk_env_)));
      r = local_.back().get();
    } else {
      EstimateCache::Impl& c = cache_->impl();
      std::string key = base_key_;
      for (int64_t v : {spec.layers, spec.dense_layers, spec.recompute_layers, spec.mtp_layers, plan_.padded_vocab})
        key.append(reinterpret_cast<const char*>(&v), sizeof v);
      key += spec.embedding ? 'E' : '-';
      key += spec.head ? 'H' : '-';
      auto it = c.chunks.find(key);
      if (it != c.chunks.end()) {
        ++c.hits;
        r = &it->second;
      } else {
        ++c.misses;
        r = &c.chunks.emplace(std::move(key), evaluate_chunk(env_, spec, plan_.padded_vocab, chunk_env_)).first->second;
      }
    }
    seen_.emplace_back(spec, r);
    for (const auto& mm : r->misses) env_.log->miss(mm.op, mm.key, mm.flops, mm.used);
    env_.log->hits += r->hits;
    return *r;
  }

 private:
  const Env& env_;
  const Plan& plan_;
  EstimateCache* cache_;
  ChunkEnv chunk_env_;
  std::string base_key_;
  std::vector<std::pair<ChunkSpec, const ChunkResult*>> seen_;
  std::vector<std::unique_ptr<ChunkResult>> local_;
};

// The whole of one pipeline rank as one chunk: its static memory, DP and optimizer.
ChunkSpec rank_spec(const Plan& p, int64_t r) {
  const auto& cs = p.chunks[static_cast<size_t>(r)];
  if (cs.size() == 1) return cs[0];
  ChunkSpec all;
  all.embedding = r == 0;
  all.head = r == p.pp - 1;
  for (const auto& c : cs) {
    all.layers += c.layers;
    all.dense_layers += c.dense_layers;
  }
  all.recompute_layers = p.strategy->is_recompute() ? std::min(all.layers, p.strategy->recompute_layer_num) : 0;
  return all;
}

// Most micro-batches whose activations a rank holds at once under its program (freed by the
// backward, or by the weight-gradient pass when the backward is split).
int64_t max_in_flight(const std::vector<Step>& steps, bool split) {
  int64_t live = 0, best = 0;
  for (const Step& st : steps) {
    if (st.pass == Pass::Forward) best = std::max(best, ++live);
    if (st.pass == (split ? Pass::BackwardWeight : Pass::Backward)) --live;
  }
  return best;
}

// Ranks reported per stage: "stage" (pp 1), first / middle (rank 1, the most in flight) / last.
std::vector<int64_t> reported_ranks(int64_t pp) {
  if (pp == 1) return {0};
  if (pp == 2) return {0, 1};
  return {0, 1, pp - 1};
}

}  // namespace

Estimate estimate(const ModelConfig& m, const StrategyConfig& s, const SystemConfig& sys, EstimateCache* cache,
                  Mode mode, bool events) {
  return estimate(resolve_plan(m, s, sys, mode), cache, events);
}

Estimate estimate(const Plan& plan, EstimateCache* cache, bool events) {
  const ModelConfig& m = *plan.model;
  const StrategyConfig& s = *plan.strategy;
  const SystemConfig& sys = *plan.system;
  Estimate est;
  EfficiencyLog log;
  Env env{m, s, sys, plan.nets, &log};
  est.mode = plan.mode;
  est.schedule = schedule_name(plan.schedule);
  est.p2p = plan.p2p == P2PMode::Async ? "async" : "blocking";
  est.dp = plan.dp;
  est.edp = plan.edp;
  est.global_batch_size = plan.global_batch_size();
  est.padded_vocab = plan.padded_vocab;
  est.straggler_ratio = plan.straggler_ratio;
  const char* group_names[] = {"tp", "cp", "dp", "pp", "ep", "etp", "edp"};
  for (size_t g = 0; g < 7; ++g) est.networks.emplace_back(group_names[g], plan.nets.name[g]);

  const int64_t pp = plan.pp, v = plan.vpp;
  const double mbc = static_cast<double>(plan.micro_batch_num);
  ChunkResults results(env, plan, cache);
  const Program program = plan.program();

  // Per-micro-batch pass times of every virtual chunk, and the pipeline transfer.
  PipelineCosts costs;
  costs.chunks.resize(static_cast<size_t>(pp));
  std::vector<PhaseSums> rank_sums(static_cast<size_t>(pp));
  for (int64_t r = 0; r < pp; ++r)
    for (const auto& spec : plan.chunks[static_cast<size_t>(r)]) {
      const PhaseSums& ps = results.get(spec).sums;
      costs.chunks[static_cast<size_t>(r)].push_back(ps.times(program.split_backward));
      rank_sums[static_cast<size_t>(r)].add(ps);
    }
  const double p2p_bytes = static_cast<double>(plan.micro_batch_size * plan.seq_len * m.hidden_size) *
                           (s.dtype == "fp32" ? 4 : 2) / static_cast<double>(plan.cp) /
                           (plan.sp ? static_cast<double>(plan.tp) : 1.0);
  costs.p2p = pp > 1 ? collective_time(sys, s, plan.nets.of(Group::PP), Collective::P2P, p2p_bytes, 2, "pp") : 0;

  est.timeline = lower(program, costs, plan.p2p).run(events);
  const double pipe = est.timeline.span();
  est.pipeline_s = pipe;

  // DP communication, optimizer and the straggler allowance after the pipeline, per rank.
  std::vector<double> rank_dp(static_cast<size_t>(pp)), rank_dense_dp(static_cast<size_t>(pp)),
      rank_edp(static_cast<size_t>(pp)), rank_optim(static_cast<size_t>(pp));
  std::vector<const ChunkResult*> whole(static_cast<size_t>(pp));
  for (int64_t r = 0; r < pp; ++r) {
    const auto ri = static_cast<size_t>(r);
    whole[ri] = &results.get(rank_spec(plan, r));
    const StaticMemory sm = shard_static_memory(whole[ri]->params, s);
    const double mg = (s.grad_reduce_in_bf16 || !s.use_fp32_accum_grad) ? 2 : 4;
    rank_edp[ri] = dp_time(env, sm.moe_params * mg, sm.moe_params * 2, plan.nets.of(Group::EDP), plan.edp, "edp");
    rank_dense_dp[ri] = dp_time(env, sm.dense_params * mg, sm.dense_params * 2, plan.nets.of(Group::DP),
                                plan.dp * plan.cp, "dp_cp");
    rank_dp[ri] = rank_dense_dp[ri] + rank_edp[ri];
    rank_optim[ri] = optimizer_time(env, sm.grad + sm.moe_grad, sm.state + sm.moe_state);
  }
  // Megatron's embedding group: with pp > 1 the first stage's embedding and the last stage's copy
  // (a tied output layer, or the MTP lookups) all-reduce their gradients after the backward
  // (_allreduce_word_embedding_grads), over the pipeline network. Default mode only.
  if (plan.mode == Mode::Default && pp > 1 && (m.tie_word_embeddings || m.mtp_num_layers > 0)) {
    const double mg = (s.grad_reduce_in_bf16 || !s.use_fp32_accum_grad) ? 2 : 4;
    const double grad = static_cast<double>(plan.padded_vocab) / static_cast<double>(plan.tp) *
                        static_cast<double>(m.hidden_size) * mg;
    const double t = collective_time(sys, s, plan.nets.of(Group::PP), Collective::AllReduce, grad, 2, "pp");
    for (size_t ri : {size_t{0}, static_cast<size_t>(pp - 1)}) {
      rank_dp[ri] += t;
      rank_dense_dp[ri] += t;
    }
  }
  const double tail_start = pipe * plan.straggler_ratio;
  for (int64_t r = 0; r < pp; ++r) {
    const auto rr = static_cast<int32_t>(r);
    const auto ri = static_cast<size_t>(r);
    const double end = tail_start + rank_dp[ri] + rank_optim[ri];
    est.timeline.totals[ri].end = std::max(est.timeline.totals[ri].end, end);
    if (!events) continue;
    auto& ev = est.timeline.events;
    if (tail_start > pipe) ev.push_back({rr, Stream::Compute, StepKind::Straggler, -1, -1, pipe, tail_start});
    if (rank_dp[ri] > 0)
      ev.push_back({rr, Stream::Dp, StepKind::DpComm, -1, -1, tail_start, tail_start + rank_dp[ri]});
    ev.push_back({rr, Stream::Compute, StepKind::Optimizer, -1, -1, tail_start + rank_dp[ri], end});
  }
  est.iteration_time_s = est.timeline.span();

  // Per-stage time breakdown, read from the chunk sums and the timeline.
  for (int64_t r : reported_ranks(pp)) {
    const auto ri = static_cast<size_t>(r);
    const PhaseSums& ps = rank_sums[ri];
    const ChunkTimes per_mb = ps.times(false);
    StageTime st;
    st.name = plan.stage_kind(r);
    st.fwd_compute_s = ps.fwd * mbc;
    st.bwd_compute_s = ps.bwd * mbc;
    st.recompute_s = ps.recompute * mbc;
    st.tp_comm_s = (ps.fwd_net + ps.bwd_net + ps.recompute_net) * mbc;
    const int neighbours = pp == 1 ? 0 : (r == 0 || r == pp - 1 ? 1 : 2);
    st.pp_comm_s = 2 * neighbours * costs.p2p * mbc * static_cast<double>(v);
    st.dp_comm_s = rank_dp[ri];
    for (size_t g = 0; g < kGroupCount; ++g) st.comm_by_group_s[g] = ps.net_by_group[g] * mbc;
    st.comm_by_group_s[static_cast<size_t>(Group::PP)] = st.pp_comm_s;
    st.comm_by_group_s[static_cast<size_t>(Group::DP)] = rank_dense_dp[ri];
    st.comm_by_group_s[static_cast<size_t>(Group::EDP)] = rank_edp[ri];
    st.optimizer_s = rank_optim[ri];
    st.pipeline_s = pipe;
    st.fwd_per_mb_s = per_mb.fwd;
    st.bwd_per_mb_s = per_mb.bwd;
    st.bubble_s = pipe - mbc * (per_mb.fwd + per_mb.bwd);
    st.total_s = tail_start + st.dp_comm_s + st.optimizer_s;
    const RankTotals& tot = est.timeline.totals[ri];
    st.p2p_wait_s = tot.p2p_blocking;
    st.idle_s = pipe - tot.compute_busy - tot.p2p_blocking;
    est.stage_times.push_back(st);
  }

  // Memory: static + cached micro-batches in flight + the single-micro-batch peak (1F1B), or a
  // replay of the rank's program over its chunks (interleaved).
  auto static_part = [&](int64_t r) {
    const ChunkResult& cr = *whole[static_cast<size_t>(r)];
    const StaticMemory sm = shard_static_memory(cr.params, s);
    StageMemory mem;
    mem.weight_bytes = sm.weight + sm.moe_weight;
    mem.grad_bytes = sm.grad + sm.moe_grad;
    mem.state_bytes = sm.state + sm.moe_state;
    mem.model_bytes = sm.total() + cr.dummy_bytes;
    return mem;
  };
  if (v == 1) {
    for (int64_t r : reported_ranks(pp)) {
      const ActivationResult& act = whole[static_cast<size_t>(r)]->act;
      StageMemory mem = static_part(r);
      mem.name = plan.stage_kind(r);
      // The peer keeps pp − r micro-batches in flight whatever their number; Megatron holds at
      // most the micro-batches the program has started and not finished.
      mem.in_flight_micro_batches = plan.mode == Mode::SimuMax12
                                        ? pp - r
                                        : max_in_flight(program.ranks[static_cast<size_t>(r)], program.split_backward);
      mem.activation_cache_per_mb_bytes = act.cache_per_mb;
      mem.peak_activation_bytes = act.peak.peak;
      static const char* kStageNames[] = {"forward", "backward", "recompute_forward", "recompute_backward"};
      mem.peak_phase = std::string(kStageNames[act.peak.peak_stage]) + " at " + act.peak.peak_leaf;
      mem.peak_alloc_bytes = mem.model_bytes +
                             static_cast<double>(mem.in_flight_micro_batches - 1) * act.cache_per_mb + act.peak.peak;
      mem.peak_reserved_bytes = mem.peak_alloc_bytes / s.mem_factor;
      est.stages.push_back(mem);
    }
  } else {
    // Interleaved: a chunk's forward adds its transient forward peak on top of the live caches,
    // its backward the backward peak beyond its cache.
    for (int64_t r = 0; r < pp; ++r) {
      const auto ri = static_cast<size_t>(r);
      StageMemory mem = static_part(r);
      mem.name = r == 0 ? "first_stage" : (r == pp - 1 ? "last_stage" : "pp_stage_" + std::to_string(r));
      mem.activation_cache_per_mb_bytes = whole[ri]->act.cache_per_mb;
      double live = 0, best = 0;
      int64_t live_n = 0, max_n = 0;
      for (const Step& st : program.ranks[ri]) {
        const ActivationResult& a = results.get(plan.chunks[ri][static_cast<size_t>(st.chunk)]).act;
        if (st.pass == Pass::Forward) {
          best = std::max(best, live + a.peak.slot[PeakPoint::kForward]);
          live += a.cache_per_mb;
          max_n = std::max(max_n, ++live_n);
        } else {
          const double bwd = std::max({a.peak.slot[PeakPoint::kBackward], a.peak.slot[PeakPoint::kRecomputeForward],
                                       a.peak.slot[PeakPoint::kRecomputeBackward]}) - a.cache_per_mb;
          best = std::max(best, live + bwd);
          live -= a.cache_per_mb;
          --live_n;
        }
      }
      mem.in_flight_micro_batches = max_n;
      mem.peak_activation_bytes = best;
      mem.peak_phase = "interleaved schedule replay";
      mem.peak_alloc_bytes = mem.model_bytes + best;
      mem.peak_reserved_bytes = mem.peak_alloc_bytes / s.mem_factor;
      est.stages.push_back(mem);
    }
  }

  const double tokens = static_cast<double>(plan.seq_len * plan.micro_batch_size * plan.micro_batch_num * plan.dp);
  const double fpt = flops_per_token(m, static_cast<double>(plan.seq_len), static_cast<double>(est.padded_vocab));
  const double theory = std::floor(fpt * tokens / static_cast<double>(plan.world));
  est.tflops_per_gpu = theory / est.iteration_time_s / kTera;
  est.mfu = est.tflops_per_gpu * kTera / sys.ops.at("default").peak_flops;
  est.tokens_per_s_per_gpu = tokens / est.iteration_time_s / static_cast<double>(plan.world);
  for (const auto& mm : log.misses) est.misses.push_back({mm.op, mm.key, mm.flops, mm.used});
  est.efficiency_hits = log.hits;
  return est;
}

}  // namespace trainsim
