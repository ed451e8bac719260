// Step estimate: chunk costs → pipeline replay → DP and optimizer → straggler → MFU, and the
// per-stage memory peaks (the peer's PerfLLM analysis_cost / analysis_mem).
#include "estimate/estimate.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "comm/collective.h"
#include "compute/cost.h"
#include "config/validate.h"
#include "core/error.h"
#include "core/units.h"
#include "memory/activation.h"
#include "model/graph.h"
#include "schedule/pipeline.h"

namespace trainsim {

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
  NetworkChoice nets;
  EfficiencyLog* log;
};

// Per-micro-batch times of a set of leaves (seconds).
struct PhaseSums {
  double fwd = 0, bwd = 0, recompute = 0;          // compute
  double fwd_net = 0, bwd_net = 0, recompute_net = 0;
  void add(const PhaseSums& o, double k = 1) {
    fwd += o.fwd * k;
    bwd += o.bwd * k;
    recompute += o.recompute * k;
    fwd_net += o.fwd_net * k;
    bwd_net += o.bwd_net * k;
    recompute_net += o.recompute_net * k;
  }
};

double comm_sum(const Env& env, const std::vector<CommCall>& calls) {
  double t = 0;
  for (const auto& c : calls)
    t += collective_time(env.sys, env.s, env.nets.of(c.group), c.kind, c.bytes, c.n, c.stage);
  return t;
}

PhaseSums leaf_sums(const Env& env, const Leaf& l, bool recomputed) {
  PhaseSums p;
  double t[3] = {0, 0, 0};
  for (int ph = 0; ph < 3; ++ph)
    for (const auto& k : l.kernels[ph]) t[ph] += kernel_time(env.sys, k, env.log);
  p.fwd = t[kFwd];
  p.bwd = t[kBwdAct] + t[kBwdW];
  p.fwd_net = comm_sum(env, l.comms[kFwd]);
  p.bwd_net = comm_sum(env, l.comms[kBwdAct]) + comm_sum(env, l.comms[kBwdW]);
  if (recomputed && l.recompute && !l.variance && env.s.enable_recompute) {
    p.recompute = p.fwd;
    if (l.recompute_repeats_comm) p.recompute_net = p.fwd_net;
  }
  return p;
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

double straggler_ratio(const StrategyConfig& s, const SystemConfig& sys) {
  if (!s.enable_straggler_model) return 1;
  const int64_t nodes = (s.world_size + sys.num_per_node - 1) / sys.num_per_node;
  const int64_t n = std::max<int64_t>(1, std::min({nodes, s.dp_size(), s.edp_size()}));
  if (n <= 1) return 1;
  // The peer's empirical tail model: 1 + log2 n/(log2 n + 1)·0.09·sqrt(log2 n).
  const double l = std::log2(static_cast<double>(n));
  return 1 + l / (l + 1) * 0.09 * std::sqrt(l);
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

ChunkResult evaluate_chunk(const Env& env, const ChunkSpec& spec, int64_t padded_vocab) {
  const Chunk chunk = build_chunk(env.m, env.s, padded_vocab, spec);
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

// The strategy fields a chunk's leaves, costs and liveness read (graph.cpp, activation.cpp,
// collective network choice of tp/cp/ep/etp). Fields that only shape the pipeline, DP or
// optimizer (pp, micro_batch_num, world_size, zero_state, ...) are not part of it.
void append_signature(std::string& out, const StrategyConfig& s) {
  auto num = [&](int64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); };
  auto real = [&](double v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); };
  auto str = [&](const std::string& v) {
    num(static_cast<int64_t>(v.size()));
    out += v;
  };
  for (int64_t v : {s.seq_len, s.micro_batch_size, s.tp_size, s.cp_size, s.ep_size, s.etp_size})
    num(v);
  for (bool b : {s.sp(), s.fp8, s.grad_reduce_in_bf16, s.use_fused_grad_accumulation, s.use_fused_norm,
                 s.use_accm_weight, s.use_flash_sdp, s.use_fused_swiglu, s.cross_entropy_loss_fusion,
                 s.attn_recompute, s.mla_rms_recompute, s.mlp_recompute, s.mlp_rms_recompute,
                 s.megatron_recompute, s.recompute_variance, s.dispatch_probs, s.offload_groupgemm_col_inputs,
                 s.enable_recompute, s.is_recompute(), s.use_fp32_accum_grad})
    out += b ? '1' : '0';
  real(s.attention_sparse_ratio);
  str(s.dtype);
  str(s.cp_comm_type);
  str(s.cp_a2a_mode);
  str(s.recompute_granularity.value_or("-"));
  str(s.te_version.value_or("-"));
  for (const auto& mod : s.megatron_recompute_modules) str(mod);
}

}  // namespace

struct EstimateCache::Impl {
  const ModelConfig* model = nullptr;
  const SystemConfig* system = nullptr;
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

// The chunk's results, from the cache when it has them.
const ChunkResult& chunk_result(const Env& env, const ChunkSpec& spec, int64_t padded_vocab,
                                EstimateCache* cache, std::vector<ChunkResult>& local) {
  if (!cache) {
    local.push_back(evaluate_chunk(env, spec, padded_vocab));
    return local.back();
  }
  EstimateCache::Impl& c = cache->impl();
  if (c.model != &env.m || c.system != &env.sys) {
    c.chunks.clear();
    c.model = &env.m;
    c.system = &env.sys;
  }
  std::string key;
  key.reserve(160);
  append_signature(key, env.s);
  for (int64_t v : {spec.layers, spec.dense_layers, spec.recompute_layers, padded_vocab})
    key.append(reinterpret_cast<const char*>(&v), sizeof v);
  key += spec.embedding ? 'E' : '-';
  key += spec.head ? 'H' : '-';
  auto it = c.chunks.find(key);
  if (it != c.chunks.end()) {
    ++c.hits;
    return it->second;
  }
  ++c.misses;
  return c.chunks.emplace(std::move(key), evaluate_chunk(env, spec, padded_vocab)).first->second;
}

}  // namespace

Estimate estimate(const ModelConfig& m, const StrategyConfig& s, const SystemConfig& sys,
                  EstimateCache* cache) {
  check_plan(m, s, sys, PlanSources{});
  Estimate est;
  EfficiencyLog log;
  Env env{m, s, sys, choose_networks(sys, s), &log};
  est.dp = s.dp_size();
  est.edp = s.edp_size();
  est.global_batch_size = s.global_batch_size();
  const char* group_names[] = {"tp", "cp", "dp", "pp", "ep", "etp", "edp"};
  for (int g = 0; g < 7; ++g) est.networks.emplace_back(group_names[g], env.nets.name[static_cast<size_t>(g)]);

  const PlanLayout plan = plan_layout(m, s);
  est.padded_vocab = plan.padded_vocab;
  const auto& stages = plan.stages;
  const int64_t pp = s.pp_size;
  std::vector<ChunkResult> local;  // results of this call when there is no cache
  local.reserve(stages.size() + plan.virtual_chunks.size());
  std::vector<const ChunkResult*> stage_results, virtual_results;
  auto record = [&](const ChunkResult& r) {
    for (const auto& mm : r.misses) log.miss(mm.op, mm.key, mm.flops, mm.used);
    log.hits += r.hits;
    return &r;
  };
  for (const auto& st : stages)
    stage_results.push_back(record(chunk_result(env, st.spec, plan.padded_vocab, cache, local)));
  for (const auto& spec : plan.virtual_chunks)
    virtual_results.push_back(record(chunk_result(env, spec, plan.padded_vocab, cache, local)));

  // Per-micro-batch phase times per stage.
  const double p2p_bytes = static_cast<double>(s.micro_batch_size * s.seq_len * m.hidden_size) *
                           (s.dtype == "fp32" ? 4 : 2) / static_cast<double>(s.cp_size) /
                           (s.sp() ? static_cast<double>(s.tp_size) : 1.0);
  const double p2p = pp > 1 ? collective_time(sys, s, env.nets.of(Group::PP), Collective::P2P, p2p_bytes, 2, "pp") : 0;
  auto phase_of = [](const PhaseSums& ps) {
    StagePhases ph;
    ph.fwd = ps.fwd + ps.fwd_net;
    ph.bwd = ps.bwd + ps.bwd_net + ps.recompute + ps.recompute_net;
    return ph;
  };
  std::vector<StagePhases> phases;
  for (size_t i = 0; i < stages.size(); ++i) {
    StagePhases ph = phase_of(stage_results[i]->sums);
    const bool first = i == 0 && pp > 1, last = i + 1 == stages.size() && pp > 1;
    if (pp > 1) {
      if (!first) ph.fwd_recv = ph.bwd_send = p2p;
      if (!last) ph.fwd_send = ph.bwd_recv = p2p;
    }
    phases.push_back(ph);
  }
  const double mbc = static_cast<double>(s.micro_batch_num);
  const int64_t v = s.interleaving_size;
  double pipe = 0;
  // Interleaved pipeline: per rank v virtual chunks of L/(pp·v) layers; the embedding rides on
  // rank 0's chunk 0 and the head on the last rank's last chunk.
  std::vector<std::vector<InterleavedPhase>> vpp_order;
  auto vchunk_index = [&](int64_t r, int64_t c) -> size_t {
    if (r == 0 && c == 0) return 0;
    if (r == pp - 1 && c == v - 1) return 2;
    return 1;
  };
  if (v > 1) {
    std::vector<std::vector<StagePhases>> grid(static_cast<size_t>(pp));
    for (int64_t r = 0; r < pp; ++r)
      for (int64_t c = 0; c < v; ++c) {
        StagePhases ph = phase_of(virtual_results[vchunk_index(r, c)]->sums);
        ph.fwd_recv = ph.fwd_send = ph.bwd_recv = ph.bwd_send = p2p;
        grid[static_cast<size_t>(r)].push_back(ph);
      }
    pipe = replay_interleaved(grid, s.micro_batch_num, s.microbatch_group_size_per_vp_stage.value_or(pp),
                              &vpp_order);
  } else {
    std::vector<StagePhases> ranks;
    for (int64_t r = 0; r < pp; ++r) ranks.push_back(phases[r == 0 ? 0 : (r == pp - 1 ? stages.size() - 1 : 1)]);
    pipe = replay_1f1b(ranks, s.micro_batch_num);
  }
  est.straggler_ratio = straggler_ratio(s, sys);

  // DP communication and optimizer per stage, then the slowest stage sets the iteration.
  std::vector<StageMemory> phys_mem;
  for (size_t i = 0; i < stages.size(); ++i) {
    const ChunkResult& cr = *stage_results[i];
    const StaticMemory sm = shard_static_memory(cr.params, s);
    const double mg = (s.grad_reduce_in_bf16 || !s.use_fp32_accum_grad) ? 2 : 4;
    const double dense_dp = dp_time(env, sm.dense_params * mg, sm.dense_params * 2, env.nets.of(Group::DP),
                                    s.dp_size() * s.cp_size, "dp_cp");
    const double moe_dp = dp_time(env, sm.moe_params * mg, sm.moe_params * 2, env.nets.of(Group::EDP),
                                  s.edp_size(), "edp");
    const double optim = optimizer_time(env, sm.grad + sm.moe_grad, sm.state + sm.moe_state);
    StageTime st;
    st.name = stages[i].name;
    const PhaseSums& ps = cr.sums;
    st.fwd_compute_s = ps.fwd * mbc;
    st.bwd_compute_s = ps.bwd * mbc;
    st.recompute_s = ps.recompute * mbc;
    st.tp_comm_s = (ps.fwd_net + ps.bwd_net + ps.recompute_net) * mbc;
    st.pp_comm_s = (phases[i].fwd_recv + phases[i].fwd_send + phases[i].bwd_recv + phases[i].bwd_send) * mbc;
    st.dp_comm_s = dense_dp + moe_dp;
    st.optimizer_s = optim;
    st.pipeline_s = pipe;
    st.fwd_per_mb_s = phases[i].fwd;
    st.bwd_per_mb_s = phases[i].bwd;
    st.bubble_s = pipe - mbc * (phases[i].fwd + phases[i].bwd);
    st.total_s = pipe * est.straggler_ratio + st.dp_comm_s + optim;
    est.stage_times.push_back(st);
    est.iteration_time_s = std::max(est.iteration_time_s, st.total_s);

    // Memory: static + cached micro-batches in flight + the single-micro-batch peak.
    const ActivationResult& act = cr.act;
    StageMemory mem;
    mem.name = stages[i].name;
    mem.weight_bytes = sm.weight + sm.moe_weight;
    mem.grad_bytes = sm.grad + sm.moe_grad;
    mem.state_bytes = sm.state + sm.moe_state;
    mem.model_bytes = sm.total() + cr.dummy_bytes;
    mem.activation_cache_per_mb_bytes = act.cache_per_mb;
    mem.in_flight_micro_batches = stages[i].in_flight;
    mem.peak_activation_bytes = act.peak.peak;
    static const char* kStageNames[] = {"forward", "backward", "recompute_forward", "recompute_backward"};
    mem.peak_phase = std::string(kStageNames[act.peak.peak_stage]) + " at " + act.peak.peak_leaf;
    mem.peak_alloc_bytes = mem.model_bytes + static_cast<double>(stages[i].in_flight - 1) * act.cache_per_mb +
                           act.peak.peak;
    mem.peak_reserved_bytes = mem.peak_alloc_bytes / s.mem_factor;
    phys_mem.push_back(mem);
  }
  if (v == 1) est.stages = phys_mem;
  if (v > 1) {
    // Sync VPP memory: replay each rank's phase order; a chunk's forward adds its transient
    // forward peak on top of the live caches, its backward the backward peak beyond its cache.
    for (int64_t r = 0; r < pp; ++r) {
      const size_t phys = r == 0 ? 0 : (r == pp - 1 ? stages.size() - 1 : 1);
      StageMemory mem = phys_mem[phys];
      mem.name = r == 0 ? "first_stage" : (r == pp - 1 ? "last_stage" : "pp_stage_" + std::to_string(r));
      double live = 0, best = 0;
      int64_t live_n = 0, max_n = 0;
      for (const auto& ph : vpp_order[static_cast<size_t>(r)]) {
        const ActivationResult& a = virtual_results[vchunk_index(r, ph.chunk)]->act;
        const double cache_mb = a.cache_per_mb;
        if (ph.forward) {
          best = std::max(best, live + a.peak.slot[PeakPoint::kForward]);
          live += cache_mb;
          max_n = std::max(max_n, ++live_n);
        } else {
          const double bwd = std::max({a.peak.slot[PeakPoint::kBackward], a.peak.slot[PeakPoint::kRecomputeForward],
                                       a.peak.slot[PeakPoint::kRecomputeBackward]}) - cache_mb;
          best = std::max(best, live + bwd);
          live -= cache_mb;
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

  const double tokens = static_cast<double>(s.seq_len * s.micro_batch_size * s.micro_batch_num * s.dp_size());
  const double fpt = flops_per_token(m, static_cast<double>(s.seq_len), static_cast<double>(est.padded_vocab));
  const double theory = std::floor(fpt * tokens / static_cast<double>(s.world_size));
  est.tflops_per_gpu = theory / est.iteration_time_s / kTera;
  est.mfu = est.tflops_per_gpu * kTera / sys.ops.at("default").peak_flops;
  est.tokens_per_s_per_gpu = tokens / est.iteration_time_s / static_cast<double>(s.world_size);
  for (const auto& mm : log.misses) est.misses.push_back({mm.op, mm.key, mm.flops, mm.used});
  est.efficiency_hits = log.hits;
  return est;
}

}  // namespace trainsim
