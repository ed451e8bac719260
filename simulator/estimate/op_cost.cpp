// Costs of one op (leaf) for one micro-batch: its kernels' times from the system's efficiency
// classes, its collectives, and the overlaps inside a layer (TP comm overlap, ring attention,
// the shared expert beside the EP all-to-alls).
#include <algorithm>

#include "compute/host_cost.h"
#include "estimate/chunk_cost.h"
#include "model/context_parallel.h"
#include "model/moe_dispatch.h"
#include "schedule/gemm_comm_overlap.h"

namespace trainsim::detail {

namespace {

// A network group of the system by kind: the plan's resolved one, else resolved here (null
// config when the system has none).
NetworkRef network_of(const Env& env, Network kind) {
  const NetworkRef& r = env.nets.nets[static_cast<size_t>(kind)];
  return r.config ? r : resolve_network(env.sys, network_name(kind), env.mode);
}

// A link's bandwidth per GPU (bytes/s) with the network's efficiency (not NCCL's all-to-all
// factor: DeepEP reached 153 of the H800's ~160 GB/s); the inter-node bandwidth is the node's,
// shared by its GPUs.
double a2a_link_bps(const NetworkRef& net, int64_t gpus_per_node) {
  const NetworkConfig& nd = *net.config;
  const double bw = nd.bandwidth.bytes_per_s * nd.bandwidth.efficient_factor;
  return net.inter_node ? bw / static_cast<double>(std::max<int64_t>(1, gpus_per_node)) : bw;
}

}  // namespace

double call_time(const Env& env, const CommCall& c) {
  if (!c.flex) {
    EfficiencySource how;
    const double t = collective_time(env.sys, env.s, env.nets.net(c.group), c.kind, c.bytes, c.n, c.stage, &how);
    if (env.log) env.log->collective(c.kind, how);
    return t;
  }
  if (c.n <= 1) return 0;
  if (env.log) env.log->collective(c.kind, EfficiencySource::Default);  // DeepEP's formula
  // NVLink: the system's high_intra_node group (the EP group's own network when it has none);
  // RDMA: inter_node. Each pays the group's fixed latency once (DeepEP's notify kernel).
  const NetworkRef& ep = env.nets.net(c.group);
  NetworkRef nvl = network_of(env, Network::HighIntraNode);
  if (!nvl.config) nvl = ep;
  const double nvl_bps = a2a_link_bps(nvl, env.sys.num_per_node);
  double rdma_bps = nvl_bps, fixed = nvl.config->bandwidth.fixed_latency_s;
  if (c.rdma_bytes > 0) {
    NetworkRef inter = network_of(env, Network::InterNode);
    if (!inter.config) inter = ep;
    rdma_bps = a2a_link_bps(inter, env.sys.num_per_node);
    fixed = std::max(fixed, inter.config->bandwidth.fixed_latency_s);
  }
  const NetOpConfig* op = ep.ops[static_cast<size_t>(Collective::AllToAll)];
  if (op && op->fixed_latency_s) fixed = *op->fixed_latency_s;
  return deepep_time(c.bytes, c.rdma_bytes, c.sms, nvl_bps, rdma_bps, c.nvl_share, c.rdma_share) + fixed;
}

// comm_sum of a non-empty list.
double comm_sum_of(const Env& env, const CommList& calls, std::array<double, kGroupCount>& by_group, int repeat) {
  double t = 0;
  for (const auto& c : calls) {
    const double x = call_time(env, c);
    t += x;
    by_group[static_cast<size_t>(c.group)] += repeat * x;
  }
  return t;
}

// Compute slow-down while a collective on `net` runs beside it: the collective occupies the
// network's `processor_usage` share of the SMs, the GEMM runs on the rest (1/(1−u) − 1).
double contention(const Env& env, Group g) {
  const NetworkConfig* net = env.nets.net(g).config;
  const double u = net ? net->processor_usage : 0;
  return u > 0 && u < 1 ? u / (1 - u) : 0;
}

namespace {

// The one TP all-gather or reduce-scatter of a Linear's phase under sequence parallelism, or null.
const CommCall* tp_collective(const Leaf& l, int phase) {
  const auto& c = l.comms[phase];
  if (c.size() != 1 || c[0].group != Group::TP) return nullptr;
  return c[0].kind == Collective::AllGather || c[0].kind == Collective::ReduceScatter ? &c[0] : nullptr;
}

// tp_comm_overlap (TransformerEngine userbuffers, default mode): phase times of a column- or
// row-parallel Linear with its TP collectives overlapped. Column (QKV, FC1): forward AG pipelined
// into the GEMM; backward AG of the input (for wgrad) in bulk beside the dgrad GEMM, and the dgrad
// RS in bulk beside the wgrad GEMM. Row (proj, FC2): forward GEMM pipelined into the RS; backward
// AG of the output gradient pipelined into the dgrad GEMM. Returns false for other leaves.
bool tp_overlapped_phases(const Env& env, const Leaf& l, const double (&t)[3], double (&phase)[3],
                          double (&comm)[3]) {
  if (env.mode != Mode::Default || !env.s.ovl.tp_comm_overlap) return false;
  const CommCall* f = tp_collective(l, kFwd);
  if (!f) return false;
  const bool column = f->kind == Collective::AllGather;
  const CommCall* ba = tp_collective(l, kBwdAct);
  const CommCall* bw = tp_collective(l, kBwdW);
  if (!ba || (column && !bw) || (!column && !l.comms[kBwdW].empty())) return false;
  const CommCall* calls[3] = {f, ba, bw};
  for (int ph = 0; ph < 3; ++ph) {
    comm[ph] = 0;
    if (!calls[ph]) continue;
    EfficiencySource how;
    comm[ph] = collective_time(env.sys, env.s, env.nets.net(Group::TP), calls[ph]->kind, calls[ph]->bytes,
                               calls[ph]->n, calls[ph]->stage, &how);
    if (env.log) env.log->collective(calls[ph]->kind, how);
  }
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

}  // namespace

// One leaf's costs for one micro-batch into `o` (a fresh op, built in place in its vector);
// `recomputed`: the leaf sits in a recomputed layer.
void leaf_cost(OpCost& o, const Env& env, const Leaf& l, bool recomputed, const char* layer_type, int32_t layer,
               bool graphed) {
  o.name = l.name;
  o.layer_type = layer_type;
  o.layer = layer;
  double t[3] = {0, 0, 0}, flops[3] = {0, 0, 0}, bytes[3] = {0, 0, 0};
  double eff_flops = 0;
  bool keyed = false, all_measured = true;
  EfficiencySource source = EfficiencySource::Measured;
  for (int ph = 0; ph < 3; ++ph)
    for (const auto& k : l.kernels[ph]) {
      const KernelCost c = kernel_cost(*env.classes, k, env.log, graphed);
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
  const bool recompute = recomputed && l.recompute && !l.variance && env.s.rc.enabled;
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
  if (env.mode == Mode::Default && env.sys.host_framework) {
    const HostFramework& f = *env.sys.host_framework;
    const bool act = !l.kernels[kBwdAct].empty() || !l.comms[kBwdAct].empty();
    o.host_fwd_s = leaf_host_s(f, l, kFwd);
    o.host_bwd_weight_s = leaf_host_s(f, l, kBwdW, !act);
    o.host_bwd_s = leaf_host_s(f, l, kBwdAct) + o.host_bwd_weight_s;
    o.host_recompute_s = recompute ? o.host_fwd_s : 0;
    o.host_sync = l.host_sync;
  }
  if (l.ring_steps > 1) {
    // Ring attention: each step's KV exchange hides under the previous step's blockwise
    // attention; only what sticks out is added. The backward circulates dK, dV with K, V and
    // returns the last dK, dV to its owner (TE AttnFuncWithCPAndKVP2P). The rest of the n − 1
    // exchanges per pass counts as CP time hidden under the attention.
    const NetworkRef& net = env.nets.net(Group::CP);
    const auto exchange = [&](double b) {
      EfficiencySource how;
      const double x = collective_time(env.sys, env.s, net, Collective::P2P, b, l.ring_steps, "cp", &how);
      if (env.log) env.log->collective(Collective::P2P, how);
      return x;
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
  p.host_fwd = o.host_fwd_s;
  p.host_bwd = o.host_bwd_s;
  p.host_recompute = o.host_recompute_s;
  p.host_bwd_w = o.host_bwd_weight_s;
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

}  // namespace trainsim::detail
