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
#include "core/small_vector.h"
#include "core/units.h"
#include "memory/activation.h"
#include "model/context_parallel.h"
#include "model/graph.h"
#include "schedule/a2a_overlap.h"
#include "schedule/gemm_comm_overlap.h"
#include "schedule/grad_buckets.h"
#include "model/moe_dispatch.h"
#include "passes/fp8.h"
#include "schedule/lower.h"
#include "schedule/program.h"
#include "schedule/steady_steps.h"

namespace trainsim {

double StageTime::exposed_comm_s(size_t group) const {
  const double total = comm_by_group_s[group];
  return group == static_cast<size_t>(Group::PP) ? std::min(total, p2p_wait_s) : total - hidden_comm_by_group_s[group];
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
  Mode mode;
  ClassTable* classes;  // sys's op and bandwidth classes, resolved as the kernels name them
};

// Per-micro-batch times of a set of leaves (seconds).
struct PhaseSums {
  double fwd = 0, bwd = 0, recompute = 0;          // compute (bwd: input + weight gradients)
  double fwd_net = 0, bwd_net = 0, recompute_net = 0;
  double bwd_w = 0, bwd_w_net = 0;                 // the weight-gradient part of bwd / bwd_net
  std::array<double, kGroupCount> net_by_group{};  // all phases' collectives, by parallel group
  std::array<double, kGroupCount> hidden_by_group{};  // the part of net_by_group under compute
  void add(const PhaseSums& o, double k = 1) {
    for (size_t g = 0; g < net_by_group.size(); ++g) {
      net_by_group[g] += o.net_by_group[g] * k;
      hidden_by_group[g] += o.hidden_by_group[g] * k;
    }
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

// comm_sum of a non-empty list.
double comm_sum_of(const Env& env, const CommList& calls, std::array<double, kGroupCount>& by_group, int repeat) {
  double t = 0;
  for (const auto& c : calls) {
    const double x = collective_time(env.sys, env.s, env.nets.net(c.group), c.kind, c.bytes, c.n, c.stage);
    t += x;
    by_group[static_cast<size_t>(c.group)] += repeat * x;
  }
  return t;
}

// Sum of the calls' times; each is also added to `by_group` (`repeat` times). Most leaf phases
// have none: they cost a test, not a call.
inline double comm_sum(const Env& env, const CommList& calls, std::array<double, kGroupCount>& by_group,
                       int repeat = 1) {
  return calls.empty() ? 0 : comm_sum_of(env, calls, by_group, repeat);
}

// The one TP all-gather or reduce-scatter of a Linear's phase under sequence parallelism, or null.
const CommCall* tp_collective(const Leaf& l, int phase) {
  const auto& c = l.comms[phase];
  if (c.size() != 1 || c[0].group != Group::TP) return nullptr;
  return c[0].kind == Collective::AllGather || c[0].kind == Collective::ReduceScatter ? &c[0] : nullptr;
}

// Compute slow-down while a collective on `net` runs beside it: the collective occupies the
// network's `processor_usage` share of the SMs, the GEMM runs on the rest (1/(1−u) − 1).
double contention(const Env& env, Group g) {
  const NetworkConfig* net = env.nets.net(g).config;
  const double u = net ? net->processor_usage : 0;
  return u > 0 && u < 1 ? u / (1 - u) : 0;
}

// tp_comm_overlap (TransformerEngine userbuffers, default mode): phase times of a column- or
// row-parallel Linear with its TP collectives overlapped. Column (QKV, FC1): forward AG pipelined
// into the GEMM; backward AG of the input (for wgrad) in bulk beside the dgrad GEMM, and the dgrad
// RS in bulk beside the wgrad GEMM. Row (proj, FC2): forward GEMM pipelined into the RS; backward
// AG of the output gradient pipelined into the dgrad GEMM. Returns false for other leaves.
bool tp_overlapped_phases(const Env& env, const Leaf& l, const double (&t)[3], double (&phase)[3],
                          double (&comm)[3]) {
  if (env.mode != Mode::Default || !env.s.tp_comm_overlap) return false;
  const CommCall* f = tp_collective(l, kFwd);
  if (!f) return false;
  const bool column = f->kind == Collective::AllGather;
  const CommCall* ba = tp_collective(l, kBwdAct);
  const CommCall* bw = tp_collective(l, kBwdW);
  if (!ba || (column && !bw) || (!column && !l.comms[kBwdW].empty())) return false;
  const CommCall* calls[3] = {f, ba, bw};
  for (int ph = 0; ph < 3; ++ph)
    comm[ph] = calls[ph] ? collective_time(env.sys, env.s, env.nets.net(Group::TP), calls[ph]->kind, calls[ph]->bytes,
                                           calls[ph]->n, calls[ph]->stage)
                         : 0;
  // TE's defaults (initialize_ub): the all-gathers run as ring exchanges driven by copy engines
  // (1 SM, no SM margin for the GEMM); pipelined reduce-scatters and bulk overlaps take 16 SMs
  // and launch the GEMM on the rest, which the network's processor_usage describes.
  const double sd = contention(env, Group::TP);
  const int64_t n = f->n;
  if (column) {
    phase[kFwd] = overlapped_time(OverlapKind::AllGatherThenGemm, t[kFwd], comm[kFwd], n, 0);
    phase[kBwdAct] = overlapped_time(OverlapKind::Bulk, t[kBwdAct], comm[kBwdW], n, sd);
    phase[kBwdW] = overlapped_time(OverlapKind::Bulk, t[kBwdW], comm[kBwdAct], n, sd);
  } else {
    phase[kFwd] = overlapped_time(OverlapKind::GemmThenReduceScatter, t[kFwd], comm[kFwd], n, sd);
    phase[kBwdAct] = overlapped_time(OverlapKind::AllGatherThenGemm, t[kBwdAct], comm[kBwdAct], n, 0);
    phase[kBwdW] = t[kBwdW];
  }
  return true;
}

// One leaf's costs for one micro-batch into `o` (a fresh op, built in place in its vector);
// `recomputed`: the leaf sits in a recomputed layer.
void leaf_cost(OpCost& o, const Env& env, const Leaf& l, bool recomputed, const char* layer_type, int32_t layer) {
  o.name = l.name;
  o.layer_type = layer_type;
  o.layer = layer;
  double t[3] = {0, 0, 0}, flops[3] = {0, 0, 0}, bytes[3] = {0, 0, 0};
  double eff_flops = 0;
  bool keyed = false, all_measured = true;
  EfficiencySource source = EfficiencySource::Measured;
  for (int ph = 0; ph < 3; ++ph)
    for (const auto& k : l.kernels[ph]) {
      const KernelCost c = kernel_cost(*env.classes, k, env.log);
      t[ph] += c.time_s;
      flops[ph] += k.flops;
      bytes[ph] += k.bytes;
      eff_flops += c.efficiency * k.flops;
      if (k.flops != 0 && !k.key.empty()) {
        keyed = true;
        all_measured = all_measured && c.measured;
        source = std::max(source, c.source);
      }
    }
  o.fwd_s = t[kFwd];
  o.bwd_s = t[kBwdAct] + t[kBwdW];
  o.bwd_weight_s = t[kBwdW];
  o.fwd_flops = flops[kFwd];
  o.bwd_flops = flops[kBwdAct] + flops[kBwdW];
  o.bytes = bytes[kFwd] + bytes[kBwdAct] + bytes[kBwdW];
  const double all_flops = o.fwd_flops + o.bwd_flops;
  o.efficiency = all_flops != 0 ? eff_flops / all_flops : 0;
  o.measured = keyed && all_measured;
  o.source = o.measured ? source : EfficiencySource::Default;
  o.cache_bytes = l.cache;
  const bool recompute = recomputed && l.recompute && !l.variance && env.s.enable_recompute;
  const bool repeats = recompute && l.recompute_repeats_comm;
  double phase[3], comm[3];
  if (tp_overlapped_phases(env, l, t, phase, comm)) {
    // The exposed part of each phase beyond its compute counts as its communication.
    const auto tp = static_cast<size_t>(Group::TP);
    const double total = comm[kFwd] * (repeats ? 2 : 1) + comm[kBwdAct] + comm[kBwdW];
    o.fwd_comm_s = phase[kFwd] - t[kFwd];
    o.bwd_weight_comm_s = phase[kBwdW] - t[kBwdW];
    o.bwd_comm_s = phase[kBwdAct] - t[kBwdAct] + o.bwd_weight_comm_s;
    o.comm_by_group_s[tp] += total;
    o.hidden_comm_by_group_s[tp] += total - o.fwd_comm_s * (repeats ? 2 : 1) - o.bwd_comm_s;
  } else {
    o.fwd_comm_s = comm_sum(env, l.comms[kFwd], o.comm_by_group_s, repeats ? 2 : 1);
    o.bwd_weight_comm_s = comm_sum(env, l.comms[kBwdW], o.comm_by_group_s);
    o.bwd_comm_s = comm_sum(env, l.comms[kBwdAct], o.comm_by_group_s) + o.bwd_weight_comm_s;
  }
  if (recompute) {
    o.recompute_s = o.fwd_s;
    o.recompute_flops = o.fwd_flops;
    o.bytes += bytes[kFwd];
    if (l.recompute_repeats_comm) o.recompute_comm_s = o.fwd_comm_s;
  }
  if (l.ring_steps > 1) {
    // Ring attention: each step's KV exchange hides under the previous step's blockwise
    // attention; only what sticks out is added. The backward circulates dK, dV with K, V and
    // returns the last dK, dV to its owner (TE AttnFuncWithCPAndKVP2P). The rest of the n − 1
    // exchanges per pass counts as CP time hidden under the attention.
    const NetworkRef& net = env.nets.net(Group::CP);
    const auto exchange = [&](double b) {
      return collective_time(env.sys, env.s, net, Collective::P2P, b, l.ring_steps, "cp");
    };
    const double n = static_cast<double>(l.ring_steps), kv = exchange(l.ring_block_bytes);
    const double kv_grad = exchange(2 * l.ring_block_bytes);
    const double fwd_x = std::max(0.0, ring_pass_time(l.ring_steps, t[kFwd] / n, kv, 0) - t[kFwd]);
    const double bwd_x = std::max(0.0, ring_pass_time(l.ring_steps, t[kBwdAct] / n, kv_grad, kv) - t[kBwdAct]);
    o.fwd_comm_s += fwd_x;
    o.bwd_comm_s += bwd_x;
    if (recompute) o.recompute_comm_s += fwd_x;
    const double fwd_all = (n - 1) * kv, bwd_all = (n - 1) * kv_grad + kv, passes = recompute ? 2 : 1;
    o.comm_by_group_s[static_cast<size_t>(Group::CP)] += passes * fwd_all + bwd_all;
    o.hidden_comm_by_group_s[static_cast<size_t>(Group::CP)] += passes * (fwd_all - fwd_x) + bwd_all - bwd_x;
  }
}

PhaseSums sums_of(const OpCost& o) {
  PhaseSums p;
  p.fwd = o.fwd_s;
  p.bwd = o.bwd_s;
  p.recompute = o.recompute_s;
  p.fwd_net = o.fwd_comm_s;
  p.bwd_net = o.bwd_comm_s;
  p.recompute_net = o.recompute_comm_s;
  p.bwd_w = o.bwd_weight_s;
  p.bwd_w_net = o.bwd_weight_comm_s;
  p.net_by_group = o.comm_by_group_s;
  p.hidden_by_group = o.hidden_comm_by_group_s;
  return p;
}

// moe_shared_expert_overlap (Megatron SharedExpertMLP on its own stream): the shared expert's
// compute runs while the dispatch and combine all-to-alls of the same layer are in flight, so
// min(shared compute, EP communication) of each pass is hidden. `ops[i]` is the cost of
// `t.leaves[i]`; the hidden time is taken from the (un)permutations' EP time in proportion and
// returned per leaf (forward, backward).
std::vector<std::array<double, 2>> overlap_shared_expert(const Env& env, const LayerTemplate& t,
                                                         std::vector<OpCost>& ops) {
  double shared[2] = {0, 0}, dispatch[2] = {0, 0};
  std::vector<std::array<double, 2>> ep(t.leaves.size(), {0, 0}), hidden(t.leaves.size(), {0, 0});
  std::array<double, kGroupCount> unused{};
  for (size_t i = 0; i < t.leaves.size(); ++i) {
    const Leaf& l = t.leaves[i];
    if (l.name.rfind("shared_expert.", 0) == 0) {
      shared[0] += ops[i].fwd_s;
      shared[1] += ops[i].bwd_s;
    }
    if (l.name != "permutation" && l.name != "unpermutation") continue;
    for (int k = 0; k < 2; ++k) {
      for (const auto& call : l.comms[k == 0 ? kFwd : kBwdAct])
        if (call.group == Group::EP) ep[i][static_cast<size_t>(k)] += comm_sum(env, {call}, unused);
      dispatch[k] += ep[i][static_cast<size_t>(k)];
    }
  }
  const auto g = static_cast<size_t>(Group::EP);
  for (size_t i = 0; i < ops.size() && i < ep.size(); ++i)
    for (int k = 0; k < 2; ++k) {
      const double x = ep[i][static_cast<size_t>(k)];
      if (x <= 0) continue;
      const double h = std::min(shared[k], dispatch[k]) * x / dispatch[k];
      (k == 0 ? ops[i].fwd_comm_s : ops[i].bwd_comm_s) -= h;
      ops[i].hidden_comm_by_group_s[g] += h;
      hidden[i][static_cast<size_t>(k)] = h;
    }
  return hidden;
}

// A piece of a chunk's backward (head, one layer, embedding): gradients it produces (dense and
// expert parameters) and its time in the whole backward and in the weight-gradient pass.
struct BackwardSegment {
  double dense = 0, moe = 0, bwd_s = 0, bwd_w_s = 0;
};

BackwardSegment backward_segment(const std::vector<Leaf>& leaves, const PhaseSums& ps) {
  BackwardSegment b;
  for (const auto& l : leaves) (l.moe_params ? b.moe : b.dense) += l.params;
  b.bwd_s = ps.times(false).bwd;
  b.bwd_w_s = ps.bwd_w + ps.bwd_w_net;
  return b;
}

// A layer template with its costs, built and costed once per estimate (or once per cache) and
// shared by every chunk that uses it: its ops (with the exposed offload copy), the EP time
// moe_shared_expert_overlap hid per leaf (forward, backward; empty without that overlap), its
// phase sums, its backward segment and its efficiency lookups.
struct CostedLayer {
  std::shared_ptr<const LayerTemplate> layer;
  std::vector<OpCost> ops;
  std::vector<std::array<double, 2>> shared_hidden;
  PhaseSums sums;
  BackwardSegment backward;
  EfficiencyLog log;
};

CostedLayer cost_layer(const Env& env, std::shared_ptr<const LayerTemplate> layer) {
  CostedLayer out;
  Env local = env;
  local.log = &out.log;
  const LayerTemplate& t = *layer;
  std::vector<OpCost>& leaves = out.ops;
  leaves.reserve(t.leaves.size() + 1);
  const char* type = t.moe ? "moe_layer" : "dense_layer";
  double offload = 0, fwd = 0, bwd = 0;
  for (const auto& l : t.leaves) {
    leaf_cost(leaves.emplace_back(), local, l, true, type, 0);
    offload += l.offload_bytes;
  }
  if (t.moe && env.s.moe_shared_expert_overlap) out.shared_hidden = overlap_shared_expert(env, t, leaves);
  for (const auto& o : leaves) {
    fwd += o.fwd_total_s();
    bwd += o.bwd_total_s();
  }
  // Activation offloading: a layer's D2H copies run on a copy stream beside its forward and the
  // H2D prefetches beside its backward; the part its compute does not cover is exposed (an op
  // of its own, so every view sees it).
  if (offload > 0) {
    const double copy = offload / env.sys.host_link_bytes_per_s;
    OpCost o;
    o.name = "activation_offload_exposed";
    o.layer_type = type;
    o.layer = 0;
    o.fwd_s = std::max(0.0, copy - fwd);
    o.bwd_s = std::max(0.0, copy - bwd);
    o.bytes = 2 * offload;
    leaves.push_back(o);
  }
  for (const auto& o : leaves) out.sums.add(sums_of(o));
  out.backward = backward_segment(t.leaves, out.sums);
  out.layer = std::move(layer);
  return out;
}

// The layer templates a cache keeps for its chunks, by the cache's chunk key without the spec and
// the kind, with the number built.
struct LayerMap {
  std::unordered_map<std::string, std::shared_ptr<const CostedLayer>> layers;
  int64_t builds = 0;
};

// Layer templates by kind: each built and costed once for all the chunks of an estimate, and for
// all the estimates of a cache (`map`, null without one; `base_key`: the cache's chunk key
// without the spec, filled before the first layer is asked for).
class LayerStore {
 public:
  LayerStore(const Env& env, const ChunkEnv& chunk_env, LayerMap* map, const std::string& base_key)
      : env_(env), chunk_env_(chunk_env), map_(map), base_key_(base_key) {
    // SimuMax v1.2 does not model dropout; the copy is only made where the strategy asks for it.
    if (env.mode == Mode::SimuMax12 && env.s.enable_dropout) {
      compat_.emplace(env.s);
      compat_->enable_dropout = false;
    }
  }
  /// The strategy the leaves are built with.
  [[nodiscard]] const StrategyConfig& strategy() const { return compat_ ? *compat_ : env_.s; }

  [[nodiscard]] std::shared_ptr<const LayerTemplate> layer(LayerKind k) {
    std::shared_ptr<const CostedLayer>& slot = local_[k.moe][k.recompute][k.continues];
    if (slot) return slot->layer;
    if (!map_) {
      slot = build(k);
      return slot->layer;
    }
    std::string key = base_key_;
    key += {k.moe ? 'M' : 'D', k.recompute ? 'R' : '-', k.continues ? 'C' : '-'};
    std::shared_ptr<const CostedLayer>& shared = map_->layers[key];
    if (!shared) {
      ++map_->builds;
      shared = build(k);
    }
    slot = shared;
    return slot->layer;
  }

  /// The costs of one of a chunk's templates: the store's, or costed here (MTP layers).
  [[nodiscard]] std::shared_ptr<const CostedLayer> costed(const std::shared_ptr<const LayerTemplate>& t) const {
    for (const auto& a : local_)
      for (const auto& b : a)
        for (const auto& c : b)
          if (c && c->layer == t) return c;
    return std::make_shared<const CostedLayer>(cost_layer(env_, t));
  }

 private:
  [[nodiscard]] std::shared_ptr<const CostedLayer> build(LayerKind k) const {
    auto t = std::make_shared<const LayerTemplate>(build_layer(env_.m, strategy(), k, chunk_env_));
    return std::make_shared<const CostedLayer>(cost_layer(env_, std::move(t)));
  }

  const Env& env_;
  const ChunkEnv& chunk_env_;
  LayerMap* map_;
  const std::string& base_key_;
  std::optional<StrategyConfig> compat_;
  std::shared_ptr<const CostedLayer> local_[2][2][2];  // [moe][recompute][continues]
};

// A chunk's ops: embedding and head leaves, and one costed layer per template (layers sharing a
// template cost the same; a recomputed template's leaves carry their roles). A chunk has one
// embedding op, at most four head ops and a few templates, held inline, as are up to 16 layers.
struct ChunkOps {
  SmallVector<OpCost, 1> pre;
  SmallVector<OpCost, 4> post;
  SmallVector<std::shared_ptr<const CostedLayer>, 4> templates;
  SmallVector<int, 16> layer_templates;  // template of each layer
  /// Every op in call order, layers numbered within the chunk (views).
  [[nodiscard]] std::vector<OpCost> expand() const {
    std::vector<OpCost> out(pre.begin(), pre.end());
    for (size_t i = 0; i < layer_templates.size(); ++i)
      for (OpCost o : templates[static_cast<size_t>(layer_templates[i])]->ops) {
        o.layer = static_cast<int32_t>(i);
        out.push_back(std::move(o));
      }
    out.insert(out.end(), post.begin(), post.end());
    return out;
  }
};

// The chunk's ops into the empty `ops` (in place: they are held inline); the embedding and head
// leaves' efficiency lookups go to `env.log`, the templates' stay with them.
void chunk_ops(ChunkOps& ops, const Env& env, const Chunk& c, const LayerStore& store) {
  for (const auto& l : c.pre) leaf_cost(ops.pre.emplace_back(), env, l, false, "embedding", -1);
  for (const auto& l : c.post) leaf_cost(ops.post.emplace_back(), env, l, false, "head", -1);
  for (const auto& t : c.templates) ops.templates.push_back(store.costed(t));
  for (const auto& L : c.layers) ops.layer_templates.push_back(L.template_index);
}

// A chunk's backward in backward order (head, last layer … first layer, embedding): inline up
// to 16 layers.
using BackwardSegments = SmallVector<BackwardSegment, 18>;

// Chunk sums; `segments` receives the backward in backward order.
PhaseSums chunk_sums(const Chunk& c, const ChunkOps& ops, BackwardSegments& segments) {
  PhaseSums total, pre, post;
  for (const auto& o : ops.pre) pre.add(sums_of(o));
  for (const auto& o : ops.post) post.add(sums_of(o));
  total.add(pre);
  total.add(post);
  segments.push_back(backward_segment(c.post, post));
  for (int ti : ops.layer_templates) total.add(ops.templates[static_cast<size_t>(ti)]->sums);
  for (size_t i = ops.layer_templates.size(); i-- > 0;)
    segments.push_back(ops.templates[static_cast<size_t>(ops.layer_templates[i])]->backward);
  segments.push_back(backward_segment(c.pre, pre));
  return total;
}

// EP all-to-all time of one phase's collectives (the dispatch and combine).
double ep_a2a_time(const Env& env, const CommList& calls) {
  double t = 0;
  for (const auto& c : calls)
    if (c.group == Group::EP && c.kind == Collective::AllToAll)
      t += collective_time(env.sys, env.s, env.nets.net(c.group), c.kind, c.bytes, c.n, c.stage);
  return t;
}

// The chunk's forward and backward cut at its EP all-to-alls (overlap_moe_expert_parallel_comm),
// read from its ops. Forward: the dispatch follows the permutation kernels, the combine precedes
// the unpermutation kernels (Megatron's MoEAlltoAllTokenDispatcher); the backward runs the mirror
// order. An all-to-all's piece is what the shared expert (moe_shared_expert_overlap) leaves of
// it; a layer's exposed offload copy ends its forward and starts its backward. A recomputed
// all-to-all stays on the compute stream. The pieces add up to the pass times.
void a2a_passes(const Env& env, const Chunk& c, const ChunkOps& ops, A2aPass& fwd, A2aPass& bwd) {
  struct Piece {
    const OpCost* op;
    const Leaf* leaf;                          // null for the offload op
    const std::array<double, 2>* hidden;       // null without moe_shared_expert_overlap
  };
  std::vector<Piece> pieces;  // forward order
  for (size_t i = 0; i < c.pre.size(); ++i) pieces.push_back({&ops.pre[i], &c.pre[i], nullptr});
  for (int ti : ops.layer_templates) {
    const CostedLayer& t = *ops.templates[static_cast<size_t>(ti)];
    const auto& leaves = t.layer->leaves;
    const auto& hidden = t.shared_hidden;
    for (size_t i = 0; i < t.ops.size(); ++i)
      pieces.push_back({&t.ops[i], i < leaves.size() ? &leaves[i] : nullptr, i < hidden.size() ? &hidden[i] : nullptr});
  }
  for (size_t i = 0; i < c.post.size(); ++i) pieces.push_back({&ops.post[i], &c.post[i], nullptr});
  auto add = [&](A2aPass& pass, double total, const Piece& p, int phase, int k, const char* a2a_first_leaf) {
    double a2a = p.leaf ? ep_a2a_time(env, p.leaf->comms[phase]) : 0;
    if (p.hidden) a2a = std::max(0.0, a2a - (*p.hidden)[static_cast<size_t>(k)]);
    const bool first = p.leaf && p.leaf->name == a2a_first_leaf;
    if (first && a2a > 0) pass.add_a2a(a2a);
    pass.add_compute(total - a2a);
    if (!first && a2a > 0) pass.add_a2a(a2a);
  };
  for (const Piece& p : pieces) add(fwd, p.op->fwd_total_s(), p, kFwd, 0, "unpermutation");
  for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) add(bwd, it->op->bwd_total_s(), *it, kBwdAct, 1, "permutation");
}

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

// Everything the estimate needs from one chunk.
struct ChunkResult {
  ChunkOps ops;
  PhaseSums sums;
  BackwardSegments backward;
  ActivationResult act;
  StaticMemory params;
  double dummy_bytes = 0;
  EfficiencyLog log;  // efficiency lookups of the embedding and head kernels (the layers': ops.templates)
  A2aPass a2a_fwd, a2a_bwd;  // overlap_moe_expert_parallel_comm only
};

// Fills the fresh result `r` with the chunk of `spec`.
void evaluate_chunk(ChunkResult& r, const Env& env, LayerStore& store, const ChunkSpec& spec, int64_t padded_vocab,
                    const ChunkEnv& chunk_env) {
  const Chunk chunk = build_chunk(env.m, store.strategy(), padded_vocab, spec, chunk_env,
                                  [&store](LayerKind k) { return store.layer(k); });
  Env local = env;
  local.log = &r.log;
  chunk_ops(r.ops, local, chunk, store);
  r.sums = chunk_sums(chunk, r.ops, r.backward);
  if (env.mode == Mode::Default && env.s.overlap_moe_expert_parallel_comm) a2a_passes(env, chunk, r.ops, r.a2a_fwd, r.a2a_bwd);
  r.act = walk_activations(chunk, env.s);
  r.params = chunk_parameters(chunk);
  r.dummy_bytes = dummy_wgrad_bytes(chunk);
}

}  // namespace

struct EstimateCache::Impl {
  std::optional<ModelConfig> model;  // compared by content on every call
  uint64_t system_hash = 0;
  std::unordered_map<std::string, ChunkResult> chunks;
  LayerMap layers;  // the templates the chunks refer to
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
int64_t EstimateCache::layer_builds() const { return impl_->layers.builds; }

namespace {

// Chunk results of one estimate: each distinct spec evaluated once, through the cache when given.
class ChunkResults {
 public:
  ChunkResults(const Env& env, const Plan& plan, EstimateCache* cache)
      : env_(env),
        plan_(plan),
        cache_(cache),
        chunk_env_{plan.chunk_env},
        store_(env, chunk_env_, cache ? &cache->impl().layers : nullptr, base_key_) {
    if (!cache_) return;
    EstimateCache::Impl& c = cache_->impl();
    const uint64_t sh = content_hash(env.sys);
    if (!c.model || !(*c.model == env.m) || c.system_hash != sh) {
      c.chunks.clear();
      c.layers.layers.clear();
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

  ChunkResults(const ChunkResults&) = delete;
  ChunkResults& operator=(const ChunkResults&) = delete;
  ~ChunkResults() {
    for (size_t i = 0; i < inline_used_; ++i) inline_[i].r.~ChunkResult();
  }

  const ChunkResult& get(const ChunkSpec& spec) {
    for (const auto& [sp, r] : seen_)
      if (sp == spec) return *r;
    const ChunkResult* r = nullptr;
    if (!cache_) {
      ChunkResult& fresh = local();
      evaluate_chunk(fresh, env_, store_, spec, plan_.padded_vocab, chunk_env_);
      r = &fresh;
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
        ChunkResult fresh;
        evaluate_chunk(fresh, env_, store_, spec, plan_.padded_vocab, chunk_env_);
        r = &c.chunks.emplace(std::move(key), std::move(fresh)).first->second;
      }
    }
    seen_.emplace_back(spec, r);
    // In the chunk's order: embedding and head, then its templates. Chunks share templates: a
    // template's misses are recorded by the first chunk using it, its hits counted by each.
    env_.log->merge(r->log);
    for (const auto& t : r->ops.templates) {
      if (std::find(merged_.begin(), merged_.end(), &t->log) != merged_.end()) {
        env_.log->add_counts(t->log);
      } else {
        env_.log->merge(t->log);
        merged_.push_back(&t->log);
      }
    }
    return *r;
  }

 private:
  // A fresh result of an estimate without a cache, where it stays (the estimate holds pointers to
  // it): inline for the first few, which most plans need at most.
  ChunkResult& local() {
    if (inline_used_ < std::size(inline_)) return *::new (&inline_[inline_used_++].r) ChunkResult;
    return *more_.emplace_back(std::make_unique<ChunkResult>());
  }
  // Room for one result, left uninitialized until used (not zeroed: a result is kilobytes).
  union Slot {
    Slot() {}
    ~Slot() {}
    ChunkResult r;
  };

  const Env& env_;
  const Plan& plan_;
  EstimateCache* cache_;
  ChunkEnv chunk_env_;
  std::string base_key_;
  LayerStore store_;
  SmallVector<std::pair<ChunkSpec, const ChunkResult*>, 4> seen_;
  Slot inline_[4];
  size_t inline_used_ = 0;
  std::vector<std::unique_ptr<ChunkResult>> more_;
  SmallVector<const EfficiencyLog*, 8> merged_;  // template logs merged so far
};

// The whole of one pipeline rank as one chunk: its static memory, DP and optimizer.
ChunkSpec rank_spec(const Plan& p, int64_t r) {
  const auto& cs = p.chunks[static_cast<size_t>(r)];
  if (cs.size() == 1) return cs[0];
  ChunkSpec all;
  for (const auto& c : cs) {
    all.embedding = all.embedding || c.embedding;
    all.head = all.head || c.head;
    all.layers += c.layers;
    all.dense_layers += c.dense_layers;
    all.mtp_layers += c.mtp_layers;
  }
  all.recompute_layers = p.strategy->is_recompute() ? std::min(all.layers, p.strategy->recompute_layer_num) : 0;
  return all;
}

// Data-parallel traffic of one rank put on its dp stream (default mode), and what stays after
// the pipeline.
struct RankDp {
  double dense_s = 0, moe_s = 0;  // every DP / EDP collective of the step
  double after_optimizer_s = 0;   // parameter all-gather after the optimizer (no overlap_param_gather)
  double param_gather_first_s = 0;  // the all-gather bucket the first forward waits for
};

// The data-parallel groups a rank reduces its gradients over: dense (dp·cp) and expert (edp).
struct DpSide {
  bool moe;
  Group group;
  const char* stage;
  [[nodiscard]] int64_t n(const Plan& plan) const { return moe ? plan.edp : plan.dp * plan.cp; }
};
constexpr DpSide kDpSides[] = {{false, Group::DP, "dp_cp"}, {true, Group::EDP, "edp"}};

// Gradient buckets of each chunk of a rank and side (dense, expert): the same for every replay
// of the rank's program, filled once per estimate.
using ChunkBuckets = std::vector<std::array<std::vector<GradBucket>, 2>>;
ChunkBuckets chunk_buckets_of(const Plan& plan, bool split_backward, int64_t r, ChunkResults& results) {
  const auto ri = static_cast<size_t>(r);
  ChunkBuckets out(plan.chunks[ri].size());
  for (size_t c = 0; c < out.size(); ++c)
    for (size_t si = 0; si < 2; ++si) {
      const int64_t n = kDpSides[si].n(plan);
      if (n <= 1) continue;
      const auto& backward = results.get(plan.chunks[ri][c]).backward;
      std::vector<GradSegment> segs;
      segs.reserve(backward.size());
      for (const auto& b : backward)
        segs.push_back({kDpSides[si].moe ? b.moe : b.dense, split_backward ? b.bwd_w_s : b.bwd_s});
      out[c][si] = grad_buckets(segs, default_bucket_params(n));
    }
  return out;
}

// Megatron's DDP buckets on the dp stream: per model chunk, gradient buckets in backward order
// whose reduce-scatter (distributed optimizer) or all-reduce starts where the last micro-batch's
// backward has produced the bucket's gradients (overlap_grad_reduce) or after the rank's last
// backward (finalize_model_grads); with overlap_param_gather the parameter all-gather of each
// bucket runs at the start of the step, in forward order, and each chunk's first forward waits
// for its first bucket (Megatron's forward pre-hook; later buckets are taken to keep ahead of
// the forward).
RankDp add_dp_ops(Engine& e, const Plan& plan, const NetworkChoice& nets, const Program& program, const StepOps& ops,
                  int64_t r, ChunkResults& results, const ChunkBuckets& chunk_buckets) {
  const StrategyConfig& s = *plan.strategy;
  const auto ri = static_cast<size_t>(r);
  const auto rr = static_cast<int32_t>(r);
  RankDp out;
  const auto& steps = program.ranks[ri];
  if (steps.empty()) return out;
  const auto v = plan.chunks[ri].size();
  const Pass grad_pass = program.split_backward ? Pass::BackwardWeight : Pass::Backward;
  std::vector<Engine::OpId> first_fwd(v, -1);
  std::vector<size_t> last_index(v, 0);
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto c = static_cast<size_t>(steps[i].chunk);
    if (steps[i].pass == Pass::Forward && first_fwd[c] < 0) first_fwd[c] = ops[ri][i];
    if (steps[i].pass == grad_pass) last_index[c] = i;
  }
  const double grad_bytes = (s.grad_reduce_in_bf16 || !s.use_fp32_accum_grad) ? 2 : 4;
  const bool sharded = s.zero_state >= 1;
  const DpSide* sides = kDpSides;
  // Full buckets share one size: a side's collective is costed again only when its kind or size
  // changes (a 70B model on few ranks fills thousands of buckets).
  struct LastCall {
    Collective kind = Collective::AllReduce;
    double bytes = -1, t = 0;
  };
  LastCall last[2];
  auto time_of = [&](const DpSide& side, Collective kind, double bytes) {
    LastCall& l = last[side.moe ? 1 : 0];
    if (l.kind != kind || l.bytes != bytes)
      l = {kind, bytes, collective_time(*plan.system, s, nets.net(side.group), kind, bytes, side.n(plan), side.stage)};
    return l.t;
  };
  auto count = [&](const DpSide& side, double t) { (side.moe ? out.moe_s : out.dense_s) += t; };
  // Parameter all-gather (distributed optimizer: bf16 parameters, fp8 with fp8_param_gather).
  for (size_t c = 0; c < v; ++c)
    for (size_t si = 0; si < 2; ++si) {
      const DpSide& side = sides[si];
      const auto& bs = chunk_buckets[c][si];
      for (auto it = bs.rbegin(); sharded && s.zero_state < 3 && it != bs.rend(); ++it) {
        const double t = time_of(side, Collective::AllGather, it->params * param_gather_bytes(s));
        count(side, t);
        if (!s.overlap_param_gather) {
          out.after_optimizer_s += t;
          continue;
        }
        const Engine::OpId id = e.add(rr, Stream::Dp, t, {StepKind::DpComm, static_cast<int32_t>(c), -1});
        if (it == bs.rbegin()) {
          e.depends(first_fwd[c], id);
          if (c == 0) out.param_gather_first_s += t;
        }
      }
    }
  // optim_grads_params (ZeRO-3 / Megatron FSDP): every forward and backward step gathers its
  // chunk's parameters again (bf16); the step waits for its first layer's share, the rest of the
  // gather runs ahead of the layers that need it (Megatron FSDP prefetches the next module). The
  // two all-gathers are the same for every micro-batch: costed once per chunk, pass and side.
  struct Gather {
    double first = 0, rest = 0;
    bool any = false;
  };
  std::vector<std::array<std::array<Gather, 2>, 2>> gathers(s.zero_state >= 3 ? v : 0);  // [chunk][bwd, fwd][side]
  for (size_t c = 0; c < gathers.size(); ++c) {
    const auto& segs = results.get(plan.chunks[ri][c]).backward;
    for (size_t si = 0; si < 2; ++si) {
      const DpSide& side = sides[si];
      if (side.n(plan) <= 1) continue;
      double total = 0;
      for (const auto& b : segs) total += side.moe ? b.moe : b.dense;
      if (total <= 0) continue;
      for (size_t fwd = 0; fwd < 2; ++fwd) {
        // Forward needs the first layer (or the embedding) first, the backward the head or last layer.
        double first = 0;
        for (size_t k = 0; k < segs.size() && first == 0; ++k) {
          const auto& b = fwd ? segs[segs.size() - 1 - k] : segs[k];
          first = side.moe ? b.moe : b.dense;
        }
        gathers[c][fwd][si] = {time_of(side, Collective::AllGather, first * 2),
                               time_of(side, Collective::AllGather, (total - first) * 2), true};
      }
    }
  }
  auto gather = [&](size_t i) {
    const auto c = static_cast<size_t>(steps[i].chunk);
    const size_t fwd = steps[i].pass == Pass::Forward ? 1 : 0;
    for (size_t si = 0; si < 2; ++si) {
      const Gather& g = gathers[c][fwd][si];
      if (!g.any) continue;
      count(sides[si], g.first + g.rest);
      const Engine::OpId id = e.add(rr, Stream::Dp, g.first, {StepKind::DpComm, static_cast<int32_t>(c), steps[i].mb});
      e.depends(ops[ri][i], id);
      if (g.rest > 0) e.add(rr, Stream::Dp, g.rest, {StepKind::DpComm, static_cast<int32_t>(c), steps[i].mb});
    }
  };
  // Gradient reduction after each chunk's last backward, or, with sharded gradients (optim_grads,
  // optim_grads_params), after every one: Megatron FSDP keeps no full gradient buffer to
  // accumulate into, so each micro-batch's backward reduce-scatters its gradients into the shard
  // (Megatron core 0.15 megatron_fsdp.py: grad_reduce_every_bprop for optim_grads and
  // optim_grads_params, whatever is_last_microbatch says). Without overlap_grad_reduce the last
  // reductions wait for the rank's last compute and the earlier ones hold the next step.
  const Engine::OpId last_compute = ops[ri].back();
  auto reduce = [&](size_t i) {
    const auto c = static_cast<size_t>(steps[i].chunk);
    const bool final_reduce = i == last_index[c];
    for (size_t si = 0; si < 2; ++si)
      for (const GradBucket& b : chunk_buckets[c][si]) {
        const DpSide& side = sides[si];
        const double t = time_of(side, sharded ? Collective::ReduceScatter : Collective::AllReduce, b.params * grad_bytes);
        count(side, t);
        const Engine::OpId id =
            e.add(rr, Stream::Dp, t, {StepKind::DpComm, static_cast<int32_t>(c), final_reduce ? -1 : steps[i].mb});
        if (s.overlap_grad_reduce) {
          e.depends_at(id, ops[ri][i], b.ready);
        } else if (final_reduce) {
          e.depends(id, last_compute);
        } else {
          e.depends(id, ops[ri][i]);
          e.depends(ops[ri][i + 1], id);
        }
      }
  };
  // The dp stream runs them in step order, except that without overlap_grad_reduce a chunk's
  // last reductions, which wait for the rank's last compute, go after everything else: queued in
  // step order they would hold the gathers and per-micro-batch reductions that later steps of
  // other chunks (interleaving) wait for, and the step could never finish.
  std::vector<size_t> after_compute;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (s.zero_state >= 3 && steps[i].pass != Pass::BackwardWeight) gather(i);
    if (steps[i].pass != grad_pass) continue;
    const bool final_reduce = i == last_index[static_cast<size_t>(steps[i].chunk)];
    if (final_reduce && !s.overlap_grad_reduce)
      after_compute.push_back(i);
    else if (final_reduce || s.zero_state >= 2)
      reduce(i);
  }
  for (size_t i : after_compute) reduce(i);
  return out;
}

// Most micro-batches whose activations a rank holds at once under its program (freed by the
// backward, or by the weight-gradient pass when the backward is split).
int64_t max_in_flight(const RankSteps& steps, bool split) {
  struct State {
    int64_t live = 0, best = 0;
  };
  const Pass frees = split ? Pass::BackwardWeight : Pass::Backward;
  return walk(steps, State{}, [frees](State& st, const Step& s) {
           if (s.pass == Pass::Forward) st.best = std::max(st.best, ++st.live);
           if (s.pass == frees) --st.live;
         }).best;
}

// What the estimate reads from one replay of the pipeline and its DP ops.
struct Replayed {
  Timeline timeline;
  SmallVector<RankDp, 8> dp;
  int64_t ops = 0;
};

// Visits every total of three replays that the estimate reads, and the streams' busy times, in a
// fixed order: `f(x0, x1, x2)` gets the same total of each; false stops the visit (and is returned).
template <class F>
bool each_total(Replayed (&r)[3], F f) {
  for (size_t k = 0; k < r[2].timeline.totals.size(); ++k) {
    RankTotals* t[3] = {&r[0].timeline.totals[k], &r[1].timeline.totals[k], &r[2].timeline.totals[k]};
    auto field = [&](auto member) { return f(t[0]->*member, t[1]->*member, t[2]->*member); };
    if (!field(&RankTotals::end)) return false;
    for (size_t st = 0; st < static_cast<size_t>(kStreamCount); ++st)
      if (!f(t[0]->stream_end[st], t[1]->stream_end[st], t[2]->stream_end[st])) return false;
    for (size_t st = 0; st < static_cast<size_t>(kStreamCount); ++st)
      if (!f(t[0]->stream_busy[st], t[1]->stream_busy[st], t[2]->stream_busy[st])) return false;
    if (!field(&RankTotals::compute_busy) || !field(&RankTotals::p2p_blocking)) return false;
  }
  for (size_t k = 0; k < r[2].dp.size(); ++k)
    for (double RankDp::*x : {&RankDp::dense_s, &RankDp::moe_s, &RankDp::after_optimizer_s, &RankDp::param_gather_first_s})
      if (!f(r[0].dp[k].*x, r[1].dp[k].*x, r[2].dp[k].*x)) return false;
  return true;
}

// The steady-state replay (PipelineReplay): programs of a, a + g and a + 2g micro-batches, with
// g the micro-batches of one period (the interleaved group, whose last one may be partial: a has
// mbc's remainder modulo g) and a past the warm-up (2·pp·v + 2g). Where every total grows by the
// same step twice (relative 1e-12, the rounding of the replay's sums), every rank's compute
// grows by the same period and no stream gets more work per period than the period, the totals
// extrapolate to mbc; else nullopt. The last two conditions rule out a rank or stream that falls
// behind a little each period (a slower stage, DP collectives slower than the compute they hang
// on): it uses up its slack and slows the pipeline only after more periods than the replays hold.
// `shorts` receives the programs of a and a + g (the walks over a rank's steps read them).
template <class Replay>
std::optional<Replayed> extrapolate(const Plan& plan, PipelineReplay mode, int64_t once_ops, const Replay& replay,
                                    Program (&shorts)[2]) {
  const int64_t mbc = plan.micro_batch_num;
  const int64_t g = plan.steady_period(), a = plan.steady_base();
  const int64_t last = a + 2 * g;
  // Auto: only where the three replays hold fewer ops than the whole program (about 5 per
  // micro-batch and virtual stage: passes and transfers; `once_ops` in each replay).
  const int64_t per_mb = 5 * plan.pp * plan.vpp;
  if (mbc <= last || (mode == PipelineReplay::Auto && 3 * once_ops + per_mb * 3 * (a + g) >= once_ops + per_mb * mbc))
    return std::nullopt;
  // The shorter programs must pair their blocking bundles and finish, as the plan's does.
  // Longest first: the shorter replays then fit in the memory the first one took.
  Replayed r[3];
  for (int64_t i = 2; i >= 0; --i) {
    Program prog = plan.program(a + i * g);
    if (plan.p2p == P2PMode::Blocking && plan.pp > 1 && !blocking_problem(prog).empty()) return std::nullopt;
    if (!replay(prog, r[i])) return std::nullopt;
    if (i < 2) shorts[i] = std::move(prog);
  }
  double period = 0, span = 0;
  for (size_t k = 0; k < r[2].timeline.totals.size(); ++k) {
    period = std::max(period, r[2].timeline.totals[k].end - r[1].timeline.totals[k].end);
    span = std::max(span, r[2].timeline.totals[k].end);
  }
  for (size_t k = 0; k < r[2].timeline.totals.size(); ++k) {
    const RankTotals &t1 = r[1].timeline.totals[k], &t2 = r[2].timeline.totals[k];
    const auto compute = static_cast<size_t>(Stream::Compute);
    if (period - (t2.end - t1.end) > 1e-12 * span ||
        period - (t2.stream_end[compute] - t1.stream_end[compute]) > 1e-12 * span)
      return std::nullopt;
    for (size_t st = 0; st < static_cast<size_t>(kStreamCount); ++st)
      if (t2.stream_busy[st] - t1.stream_busy[st] > period + 1e-12 * span) return std::nullopt;
  }
  const auto periods = static_cast<double>((mbc - last) / g);
  const bool linear = each_total(r, [periods](double x0, double x1, double& x2) {
    const double step = x2 - x1;
    if (std::abs(step - (x1 - x0)) > 1e-12 * std::max({std::abs(x0), std::abs(x2)})) return false;
    x2 += periods * step;
    return true;
  });
  if (!linear) return std::nullopt;
  r[2].ops += r[0].ops + r[1].ops;
  return std::move(r[2]);
}

// Ranks reported per stage: "stage" (pp 1), first / middle (rank 1, the most in flight) / last.
struct ReportedRanks {
  int64_t r[3];
  size_t n;
  [[nodiscard]] const int64_t* begin() const { return r; }
  [[nodiscard]] const int64_t* end() const { return r + n; }
};
ReportedRanks reported_ranks(int64_t pp) {
  if (pp == 1) return {{0, 0, 0}, 1};
  if (pp == 2) return {{0, 1, 0}, 2};
  return {{0, 1, pp - 1}, 3};
}

}  // namespace

Estimate estimate(const ModelConfig& m, const StrategyConfig& s, const SystemConfig& sys, EstimateCache* cache,
                  Mode mode, bool events) {
  return estimate(resolve_plan(m, s, sys, mode), cache, events);
}

Estimate estimate(const Plan& plan, EstimateCache* cache, bool events, PipelineReplay replay_mode) {
  const ModelConfig& m = *plan.model;
  const StrategyConfig& s = *plan.strategy;
  const SystemConfig& sys = *plan.system;
  Estimate est;
  EfficiencyLog log;
  ClassTable classes(sys);
  // The plan's networks found in its system as it is now (as the classes): the system may have
  // been edited in place since the plan was resolved, its entries replaced.
  const NetworkChoice nets = resolve_networks(sys, plan.nets.kind);
  Env env{m, s, sys, nets, &log, plan.mode, &classes};
  est.mode = plan.mode;
  est.schedule = schedule_name(plan.schedule);
  est.p2p = plan.p2p == P2PMode::Async ? "async" : "blocking";
  est.dp = plan.dp;
  est.edp = plan.edp;
  est.global_batch_size = plan.global_batch_size();
  est.padded_vocab = plan.padded_vocab;
  est.straggler_ratio = plan.straggler.ratio;
  est.straggler = plan.straggler;
  static constexpr std::string_view group_names[] = {"tp", "cp", "dp", "pp", "ep", "etp", "edp"};
  for (size_t g = 0; g < 7; ++g) est.networks[g] = {group_names[g], plan.nets.of(static_cast<Group>(g))};

  const int64_t pp = plan.pp, v = plan.vpp;
  const double mbc = static_cast<double>(plan.micro_batch_num);
  ChunkResults results(env, plan, cache);
  const bool split = plan.split_backward();

  // Per-micro-batch pass times of every virtual chunk, and the pipeline transfer. Kept per thread
  // across estimates (as the engine below) so that refilling them allocates nothing.
  thread_local PipelineCosts costs_memory;
  PipelineCosts& costs = costs_memory;
  costs.chunks.resize(static_cast<size_t>(pp));
  costs.a2a.resize(plan.a2a_overlap ? static_cast<size_t>(pp) : 0);
  costs.a2a_slowdown = 0;
  // Per-rank arrays of the estimate: inline for pipelines up to 8 stages.
  SmallVector<PhaseSums, 8> rank_sums;
  rank_sums.assign(static_cast<size_t>(pp), {});
  for (int64_t r = 0; r < pp; ++r) {
    costs.chunks[static_cast<size_t>(r)].clear();
    costs.chunks[static_cast<size_t>(r)].reserve(static_cast<size_t>(v));
    if (plan.a2a_overlap) {
      costs.a2a[static_cast<size_t>(r)].clear();
      costs.a2a[static_cast<size_t>(r)].reserve(static_cast<size_t>(v));
    }
    for (const auto& spec : plan.chunks[static_cast<size_t>(r)]) {
      const ChunkResult& cr = results.get(spec);
      const PhaseSums& ps = cr.sums;
      costs.chunks[static_cast<size_t>(r)].push_back(ps.times(split));
      if (plan.a2a_overlap) costs.a2a[static_cast<size_t>(r)].push_back({cr.a2a_fwd, cr.a2a_bwd});
      rank_sums[static_cast<size_t>(r)].add(ps);
    }
  }
  const double p2p_bytes = static_cast<double>(plan.micro_batch_size * plan.seq_len * m.hidden_size) *
                           (s.dtype == "fp32" ? 4 : 2) / static_cast<double>(plan.cp) /
                           (plan.sp ? static_cast<double>(plan.tp) : 1.0);
  // The all-to-all kernels take the EP network's processor_usage share of the SMs; DeepEP's take
  // moe_deepep_num_sms of the accelerator's SMs.
  if (plan.a2a_overlap)
    costs.a2a_slowdown = s.moe_enable_deepep
                             ? deepep_slowdown(s.moe_deepep_num_sms.value_or(kDeepEpDefaultNumSms), *sys.sm_count)
                             : contention(env, Group::EP);
  costs.p2p = pp > 1 ? collective_time(sys, s, nets.net(Group::PP), Collective::P2P, p2p_bytes, 2, "pp") : 0;
  if (plan.mode == Mode::Default && s.scatter_gather_tensors_in_pipeline) {
    // Narayanan et al. 2021, §4.1: the TP ranks of a stage hold the same activation; each sends
    // its 1/tp slice to its peer, and the next stage all-gathers the slices over its TP group
    // (2021 Megatron-LM p2p_communication.py: split_tensor_into_1d_equal_chunks, gather_split_1d_tensor).
    const auto tp = static_cast<double>(plan.tp);
    costs.p2p = collective_time(sys, s, nets.net(Group::PP), Collective::P2P, p2p_bytes / tp, 2, "pp") +
                collective_time(sys, s, nets.net(Group::TP), Collective::AllGather, p2p_bytes, plan.tp, "tp");
  }

  const bool scheduled_dp = plan.mode == Mode::Default;
  SmallVector<ChunkBuckets, 8> buckets;
  buckets.assign(static_cast<size_t>(pp), {});
  // Ops of the DP buckets that the program holds once, whatever its micro-batches (the final
  // reductions and the parameter all-gathers): every steady-state replay repeats them.
  int64_t once_ops = 0;
  if (scheduled_dp)
    for (int64_t r = 0; r < pp; ++r) {
      buckets[static_cast<size_t>(r)] = chunk_buckets_of(plan, split, r, results);
      for (const auto& sides : buckets[static_cast<size_t>(r)])
        for (const auto& bs : sides)
          once_ops += static_cast<int64_t>(bs.size()) * (s.zero_state >= 2 ? 0 : s.overlap_param_gather ? 2 : 1);
    }
  // The replays reuse one engine's and one step table's memory, kept per thread across estimates
  // (as the engine's replay keeps its working arrays): lowering empties them first.
  thread_local Engine engine(1);
  thread_local StepOps step_ops;
  // Replays `prog` into `out`: false when it cannot finish.
  auto replay = [&](const Program& prog, Replayed& out) {
    lower(prog, costs, plan.p2p, engine, scheduled_dp ? &step_ops : nullptr);  // the DP ops hang on the steps
    out.dp.assign(static_cast<size_t>(pp), {});
    if (scheduled_dp)
      for (int64_t r = 0; r < pp; ++r) out.dp[static_cast<size_t>(r)] = add_dp_ops(engine, plan, nets, prog, step_ops, r, results,
                                                     buckets[static_cast<size_t>(r)]);
    out.ops = static_cast<int64_t>(engine.size());
    return engine.try_run(out.timeline, events);
  };
  std::optional<Replayed> replayed;
  Program shorts[2];
  if (!events && replay_mode != PipelineReplay::Full) replayed = extrapolate(plan, replay_mode, once_ops, replay, shorts);
  // The walks below (memory, merged steps) read each rank's steps: from the short programs when
  // the replay extrapolated and the plan's program is theirs with the steady block repeated,
  // else from the whole program.
  SmallVector<RankSteps, 8> rank_steps;
  rank_steps.assign(static_cast<size_t>(pp), {});
  bool periodic = replayed.has_value();
  if (periodic) {
    const int64_t repeats = (plan.micro_batch_num - plan.steady_base()) / plan.steady_period();
    for (int64_t r = 0; r < pp && periodic; ++r) {
      const auto ri = static_cast<size_t>(r);
      const auto rs = periodic_steps(shorts[0].ranks[ri], shorts[1].ranks[ri], repeats);
      periodic = rs.has_value();
      if (rs) rank_steps[ri] = *rs;
    }
  }
  // The whole program, when read, is built into memory kept per thread (as the engine's).
  thread_local Program program_memory;
  Program& program = program_memory;
  if (!periodic) {
    plan.program(plan.micro_batch_num, program);
    for (int64_t r = 0; r < pp; ++r) rank_steps[static_cast<size_t>(r)] = whole_steps(program.ranks[static_cast<size_t>(r)]);
  }
  if (!replayed) {
    const bool ran = replay(program, replayed.emplace());
    TRAINSIM_ASSERT(ran, "schedule program deadlocked in the engine");
  }
  est.timeline = std::move(replayed->timeline);
  est.engine_ops = replayed->ops;
  const auto& dp_ops = replayed->dp;
  // The pipeline ends with the last compute or p2p op; DP buckets may run past it.
  double pipe = 0;
  for (const RankTotals& t : est.timeline.totals)
    for (Stream st : {Stream::Compute, Stream::PpForward, Stream::PpBackward})
      pipe = std::max(pipe, t.stream_end[static_cast<size_t>(st)]);
  est.pipeline_s = pipe;

  // DP communication, optimizer and the straggler allowance after the pipeline, per rank.
  // Per rank, in one block: DP (dense + expert, dense, expert), optimizer and exposed DP times.
  SmallVector<double, 5 * 8> per_rank;
  per_rank.assign(5 * static_cast<size_t>(pp), 0);
  double* const rank_dp = per_rank.begin();
  double* const rank_dense_dp = rank_dp + pp;
  double* const rank_edp = rank_dense_dp + pp;
  double* const rank_optim = rank_edp + pp;
  double* const rank_exposed_dp = rank_optim + pp;
  SmallVector<const ChunkResult*, 8> whole;
  whole.assign(static_cast<size_t>(pp), nullptr);
  for (int64_t r = 0; r < pp; ++r) {
    const auto ri = static_cast<size_t>(r);
    whole[ri] = &results.get(rank_spec(plan, r));
    // Ranks holding the same layers (the middle ones) have the same DP and optimizer costs.
    const bool same = r > 0 && whole[ri] == whole[ri - 1];
    const StaticMemory sm = shard_static_memory(whole[ri]->params, s);
    const double mg = (s.grad_reduce_in_bf16 || !s.use_fp32_accum_grad) ? 2 : 4;
    if (scheduled_dp) {
      rank_edp[ri] = dp_ops[ri].moe_s;
      rank_dense_dp[ri] = dp_ops[ri].dense_s;
    } else if (same) {
      rank_edp[ri] = rank_edp[ri - 1];
      rank_dense_dp[ri] = rank_dense_dp[ri - 1];
    } else {
      // SimuMax v1.2 (_compute_dp_time) sizes the reduce-scatter from its module gradient bytes,
      // which ZeRO >= 2 has already divided by dp·cp (experts: edp): the sharded gradient.
      const bool zero2 = s.zero_state >= 2;
      const double moe_grad = zero2 ? sm.moe_grad : sm.moe_params * mg;
      const double dense_grad = zero2 ? sm.grad : sm.dense_params * mg;
      const double pe = s.dtype == "fp32" ? 4 : 2;  // the parameters in the training dtype (numel·elem)
      rank_edp[ri] = dp_time(env, moe_grad, moe_grad / mg * pe, nets.net(Group::EDP), plan.edp, "edp");
      rank_dense_dp[ri] = dp_time(env, dense_grad, dense_grad / mg * pe, nets.net(Group::DP), plan.dp * plan.cp, "dp_cp");
    }
    rank_dp[ri] = rank_dense_dp[ri] + rank_edp[ri];
    rank_optim[ri] = same ? rank_optim[ri - 1] : optimizer_step_time(env, sm.grad + sm.moe_grad, sm.state + sm.moe_state);
  }
  // Megatron's embedding group: with pp > 1 the first stage's embedding and the last stage's copy
  // (a tied output layer, or the MTP lookups) all-reduce their gradients after the backward
  // (_allreduce_word_embedding_grads), over the pipeline network. Default mode only.
  if (plan.mode == Mode::Default && pp > 1 && (m.tie_word_embeddings || m.mtp_num_layers > 0)) {
    const double mg = (s.grad_reduce_in_bf16 || !s.use_fp32_accum_grad) ? 2 : 4;
    const double grad = static_cast<double>(plan.padded_vocab) / static_cast<double>(plan.tp) *
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

  // Per-stage time breakdown, read from the chunk sums and the timeline.
  est.stage_times.reserve(reported_ranks(pp).n);
  for (int64_t r : reported_ranks(pp)) {
    const auto ri = static_cast<size_t>(r);
    const PhaseSums& ps = rank_sums[ri];
    const ChunkTimes per_mb = ps.times(false);
    StageTime& st = est.stage_times.emplace_back();  // filled in place
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
    st.total_s = est.timeline.totals[ri].end;
    for (Group g : kChunkGroups)
      st.hidden_comm_by_group_s[static_cast<size_t>(g)] = ps.hidden_by_group[static_cast<size_t>(g)] * mbc;
    if (rank_dp[ri] > 0) {
      // The hidden DP time, shared between the dense and expert groups by their totals.
      const double hidden = std::max(0.0, rank_dp[ri] - rank_exposed_dp[ri]) / rank_dp[ri];
      st.hidden_comm_by_group_s[static_cast<size_t>(Group::DP)] = rank_dense_dp[ri] * hidden;
      st.hidden_comm_by_group_s[static_cast<size_t>(Group::EDP)] = rank_edp[ri] * hidden;
    }
    if (plan.a2a_overlap) {
      // What the merged steps save over running their passes one after the other.
      // Per (forward chunk, backward chunk): computed once, summed over the merged steps.
      const auto& a2a = costs.a2a[ri];
      std::vector<double> saved(static_cast<size_t>(v * v));
      for (size_t f = 0; f < a2a.size(); ++f)
        for (size_t b = 0; b < a2a.size(); ++b)
          saved[f * a2a.size() + b] = std::max(0.0, a2a[f].fwd.total() + a2a[b].bwd.total() -
                                                        merged_step_time(a2a[f].fwd, a2a[b].bwd, costs.a2a_slowdown));
      // The key: the chunk of the merged forward just run, else -1.
      const double hidden = sum_steps(rank_steps[ri], int64_t{-1}, [&](int64_t& merged_chunk, const Step& step) {
        const double term = merged_chunk >= 0
                                ? saved[static_cast<size_t>(merged_chunk) * a2a.size() + static_cast<size_t>(step.chunk)]
                                : 0.0;
        merged_chunk = step.merged ? step.chunk : -1;
        return term;
      });
      const auto ep = static_cast<size_t>(Group::EP);
      st.hidden_comm_by_group_s[ep] = std::min(hidden, st.comm_by_group_s[ep]);
    }
    const RankTotals& tot = est.timeline.totals[ri];
    st.p2p_wait_s = tot.p2p_blocking;
    st.idle_s = pipe - tot.compute_busy - tot.p2p_blocking;
  }

  // Memory: static + cached micro-batches in flight + the single-micro-batch peak (1F1B), or a
  // replay of the rank's program over its chunks (interleaved).
  // The static part of rank r's memory into the fresh `mem` (filled in place).
  auto static_part = [&](int64_t r, StageMemory& mem) {
    const ChunkResult& cr = *whole[static_cast<size_t>(r)];
    const StaticMemory sm = shard_static_memory(cr.params, s);
    mem.weight_bytes = sm.weight + sm.moe_weight;
    mem.grad_bytes = sm.grad + sm.moe_grad;
    mem.state_bytes = sm.state + sm.moe_state;
    mem.model_bytes = sm.total() + cr.dummy_bytes;
    if (plan.mode == Mode::Default && s.zero_state >= 3) {
      // FSDP's gathered working set: the bf16 parameters of the layer computing and of the one
      // prefetched (the largest layer of the rank, twice).
      double largest = 0;
      for (const auto& b : cr.backward) largest = std::max(largest, b.dense + b.moe);
      mem.model_bytes += 2 * largest * 2;
    }
    // Optimizer CPU offload: the offloaded states leave the GPU; the host holds them and an fp32
    // copy of their gradients (4 B next to 12 B per parameter).
    const double offloaded = offloaded_fraction(s) * mem.state_bytes;
    mem.state_bytes -= offloaded;
    mem.model_bytes -= offloaded;
    mem.host_bytes = offloaded * 16 / 12;
  };
  est.stages.reserve(v == 1 ? reported_ranks(pp).n : static_cast<size_t>(pp));
  if (v == 1) {
    for (int64_t r : reported_ranks(pp)) {
      const ActivationResult& act = whole[static_cast<size_t>(r)]->act;
      StageMemory& mem = est.stages.emplace_back();
      static_part(r, mem);
      mem.name = plan.stage_kind(r);
      // The peer keeps pp − r micro-batches in flight whatever their number; Megatron holds at
      // most the micro-batches the program has started and not finished.
      mem.in_flight_micro_batches = plan.mode == Mode::SimuMax12
                                        ? pp - r
                                        : max_in_flight(rank_steps[static_cast<size_t>(r)], split);
      mem.activation_cache_per_mb_bytes = act.cache_per_mb;
      mem.peak_activation_bytes = act.peak.peak;
      static const std::string_view kStageNames[] = {"forward", "backward", "recompute_forward", "recompute_backward"};
      const std::string_view stage = kStageNames[act.peak.peak_stage];
      mem.peak_phase.reserve(stage.size() + 4 + act.peak.peak_leaf.size());
      mem.peak_phase.append(stage).append(" at ").append(act.peak.peak_leaf);
      mem.peak_alloc_bytes = mem.model_bytes +
                             static_cast<double>(mem.in_flight_micro_batches - 1) * act.cache_per_mb + act.peak.peak;
      // Offloaded activations of every micro-batch in flight wait in host memory.
      mem.host_bytes += static_cast<double>(mem.in_flight_micro_batches) * act.offloaded_per_mb;
      mem.peak_reserved_bytes = mem.peak_alloc_bytes / s.mem_factor;
    }
  } else {
    // Interleaved: a chunk's forward adds its transient forward peak on top of the live caches,
    // its backward the backward peak beyond its cache.
    for (int64_t r = 0; r < pp; ++r) {
      const auto ri = static_cast<size_t>(r);
      StageMemory& mem = est.stages.emplace_back();
      static_part(r, mem);
      mem.name = r == 0 ? "first_stage" : (r == pp - 1 ? "last_stage" : "pp_stage_" + std::to_string(r));
      mem.activation_cache_per_mb_bytes = whole[ri]->act.cache_per_mb;
      std::vector<const ActivationResult*> acts;
      for (const ChunkSpec& spec : plan.chunks[ri]) acts.push_back(&results.get(spec).act);
      struct State {
        double live = 0, best = 0, host = 0, host_max = 0;
        int64_t live_n = 0, max_n = 0;
      };
      const State w = walk(rank_steps[ri], State{}, [&](State& x, const Step& step) {
        const ActivationResult& a = *acts[static_cast<size_t>(step.chunk)];
        if (step.pass == Pass::Forward) {
          x.best = std::max(x.best, x.live + a.peak.slot[PeakPoint::kForward]);
          x.live += a.cache_per_mb;
          x.host += a.offloaded_per_mb;
          x.host_max = std::max(x.host_max, x.host);
          x.max_n = std::max(x.max_n, ++x.live_n);
        } else {
          const double bwd = std::max({a.peak.slot[PeakPoint::kBackward], a.peak.slot[PeakPoint::kRecomputeForward],
                                       a.peak.slot[PeakPoint::kRecomputeBackward]}) - a.cache_per_mb;
          x.best = std::max(x.best, x.live + bwd);
          x.live -= a.cache_per_mb;
          x.host -= a.offloaded_per_mb;
          --x.live_n;
        }
      });
      mem.in_flight_micro_batches = w.max_n;
      mem.peak_activation_bytes = w.best;
      mem.peak_phase = "interleaved schedule replay";
      mem.peak_alloc_bytes = mem.model_bytes + w.best;
      mem.host_bytes += w.host_max;
      mem.peak_reserved_bytes = mem.peak_alloc_bytes / s.mem_factor;
    }
  }

  // What views read per rank: every chunk's ops and the memory the rank holds.
  est.micro_batches = plan.micro_batch_num;
  if (events) {
    for (int64_t r = 0; r < pp; ++r) {
      const auto ri = static_cast<size_t>(r);
      RankProfile prof;
      StageMemory mem;
      static_part(r, mem);
      prof.model_bytes = mem.model_bytes;
      for (const auto& spec : plan.chunks[ri]) {
        const ChunkResult& cr = results.get(spec);
        prof.chunks.push_back(cr.ops.expand());
        prof.chunk_cache_bytes.push_back(cr.act.cache_per_mb);
        prof.chunk_peak_bytes.push_back(cr.act.peak.peak);
      }
      est.ranks.push_back(std::move(prof));
    }
  }

  const double tokens = static_cast<double>(plan.seq_len * plan.micro_batch_size * plan.micro_batch_num * plan.dp);
  const double fpt = flops_per_token(m, static_cast<double>(plan.seq_len), static_cast<double>(est.padded_vocab));
  const double theory = std::floor(fpt * tokens / static_cast<double>(plan.world));
  est.tflops_per_gpu = theory / est.iteration_time_s / kTera;
  est.mfu = est.tflops_per_gpu * kTera / sys.ops.known_at(ComputeOps::slot("default")).peak_flops;
  est.tokens_per_s_per_gpu = tokens / est.iteration_time_s / static_cast<double>(plan.world);
  est.misses = std::move(log.misses);
  est.efficiency_hits = log.hits;
  est.efficiency_interpolated = log.interpolated;
  est.efficiency_extrapolated = log.extrapolated;
  return est;
}

}  // namespace trainsim
