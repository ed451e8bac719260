// Chunk costing: layer templates built and costed once (LayerStore), a chunk's ops and phase
// sums, its backward in segments, the EP all-to-all pieces of its passes, and its memory walk.
#include <algorithm>

#include "compute/host_cost.h"
#include "estimate/chunk_cost.h"

namespace trainsim::detail {

namespace {

// What the plan's CUDA graphs capture, the one decision every graph effect reads (default mode;
// compat mode has no graphs): a replayed op's kernels pay their classes' graph floor
// (leaf_cost), its host one replay per run (layer_host, chunk_ops).
GraphCapture plan_graphs(const Env& env) { return env.mode == Mode::Default ? graph_capture(env.s) : GraphCapture{}; }

// The host side of a layer's ops (default mode with host.framework): what its CUDA graphs hold
// (`cap`, per leaf) costs one replay per run of captured ops and pass (on the run's first op),
// nothing per op; Megatron's Python around the layer's forward goes on its first op unless a
// graph holds the whole layer.
void layer_host(const Env& env, const GraphCapture& g, const std::vector<bool>& cap, std::vector<OpCost>& ops,
                bool& sync) {
  const HostFramework& f = *env.sys.host_framework;
  bool whole = !cap.empty();
  for (size_t i = 0; i < cap.size(); ++i) {
    OpCost& o = ops[i];
    sync = sync || o.host_sync;
    whole = whole && cap[i];
    if (!cap[i]) continue;
    const double replay = g.all || (i > 0 && cap[i - 1]) ? 0 : f.graph_launch_s;
    o.host_fwd_s = o.host_bwd_s = replay;
    o.host_bwd_weight_s = 0;
    if (o.host_recompute_s > 0) o.host_recompute_s = replay;
  }
  if (whole || ops.empty()) return;
  ops[0].host_fwd_s += f.megatron_layer_s;
  if (ops[0].recompute_s > 0) ops[0].host_recompute_s += f.megatron_layer_s;
}

}  // namespace

BackwardSegment backward_segment(const std::vector<Leaf>& leaves, const PhaseSums& ps) {
  BackwardSegment b;
  for (const auto& l : leaves) (l.moe_params ? b.moe : b.dense) += l.params;
  b.bwd_s = ps.times(false).bwd;
  b.bwd_w_s = ps.bwd_w + ps.bwd_w_net;
  return b;
}

CostedLayer cost_layer(const Env& env, std::shared_ptr<const LayerTemplate> layer) {
  CostedLayer out;
  Env local = env;
  local.log = &out.log;
  const LayerTemplate& t = *layer;
  std::vector<OpCost>& leaves = out.ops;
  leaves.reserve(t.leaves.size() + 1);
  const char* type = t.moe ? "moe_layer" : "dense_layer";
  double offload = 0, fwd = 0, bwd = 0;
  const GraphCapture g = plan_graphs(env);
  const std::vector<bool> cap = captured_leaves(t, g);
  for (size_t i = 0; i < t.leaves.size(); ++i) {
    leaf_cost(leaves.emplace_back(), local, t.leaves[i], true, type, 0, cap[i]);
    offload += t.leaves[i].offload_bytes;
  }
  if (env.mode == Mode::Default && env.sys.host_framework) layer_host(env, g, cap, leaves, out.host_sync);
  if (t.moe && env.s.moe.shared_expert_overlap) out.shared_hidden = overlap_shared_expert(env, t, leaves);
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

// The chunk's ops into the empty `ops` (in place: they are held inline); the embedding and head
// leaves' efficiency lookups go to `env.log`, the templates' stay with them.
void chunk_ops(ChunkOps& ops, const Env& env, const Chunk& c, const LayerStore& store) {
  // full_iteration: one graph holds the whole step, the embedding and the head too.
  const bool all = plan_graphs(env).all;
  for (const auto& l : c.pre) leaf_cost(ops.pre.emplace_back(), env, l, false, "embedding", -1, all);
  for (const auto& l : c.post) leaf_cost(ops.post.emplace_back(), env, l, false, "head", -1, all);
  if (all && env.sys.host_framework) {
    auto none = [](OpCost& o) { o.host_fwd_s = o.host_bwd_s = o.host_bwd_weight_s = o.host_recompute_s = 0; };
    for (OpCost& o : ops.pre) none(o);
    for (OpCost& o : ops.post) none(o);
  }
  for (const auto& t : c.templates) ops.templates.push_back(store.costed(t));
  for (const auto& L : c.layers) ops.layer_templates.push_back(L.template_index);
}

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
      t += call_time(env, c);
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

namespace {

// The chunk's forward cut at its sync points, when it has any: each segment's host and device
// seconds, in call order.
void host_sync_walk(const Env& env, ChunkResult& r) {
  const ChunkOps& ops = r.ops;
  bool any = false;
  for (const auto& t : ops.templates) any = any || t->host_sync;
  for (const OpCost& o : ops.pre) any = any || o.host_sync;
  for (const OpCost& o : ops.post) any = any || o.host_sync;
  if (!any) return;
  SmallVector<HostSegment, 16> seg;
  seg.push_back({});
  auto add = [&](const OpCost& o) {
    if (o.host_sync) seg.push_back({});
    seg.back().host += o.host_fwd_s;
    seg.back().device += o.fwd_total_s();
  };
  for (const OpCost& o : ops.pre) add(o);
  for (int ti : ops.layer_templates)
    for (const OpCost& o : ops.templates[static_cast<size_t>(ti)]->ops) add(o);
  for (const OpCost& o : ops.post) add(o);
  const HostFramework& f = *env.sys.host_framework;
  r.fwd_sync = synced_pass(std::span<const HostSegment>(seg.begin(), seg.size()), f.sync_s, f.eager_op_s);
  r.fwd_synced = true;
}

}  // namespace

// Fills the fresh result `r` with the chunk of `spec`.
void evaluate_chunk(ChunkResult& r, const Env& env, LayerStore& store, const ChunkSpec& spec, int64_t padded_vocab,
                    const ChunkEnv& chunk_env) {
  const Chunk chunk = build_chunk(env.m, store.strategy(), padded_vocab, spec, chunk_env,
                                  [&store](LayerKind k) { return store.layer(k); });
  Env local = env;
  local.log = &r.log;
  chunk_ops(r.ops, local, chunk, store);
  r.sums = chunk_sums(chunk, r.ops, r.backward);
  if (env.mode == Mode::Default && env.s.ovl.a2a_overlap) a2a_passes(env, chunk, r.ops, r.a2a_fwd, r.a2a_bwd);
  if (env.mode == Mode::Default && env.sys.host_framework) host_sync_walk(env, r);
  r.act = walk_activations(chunk, env.s);
  r.params = chunk_parameters(chunk);
  r.dummy_bytes = dummy_wgrad_bytes(chunk);
}


}  // namespace trainsim::detail
