// The estimate's first stage: the ops of a chunk costed (efficiency lookups, collectives,
// overlaps inside a layer), their per-micro-batch phase sums, and every chunk result the later
// stages read. Internal to estimate/.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "comm/collective.h"
#include "compute/cost.h"
#include "compute/host_cost.h"
#include "core/small_vector.h"
#include "estimate/estimate.h"
#include "memory/activation.h"
#include "model/graph.h"
#include "schedule/a2a_overlap.h"
#include "schedule/grad_buckets.h"
#include "schedule/lower.h"

namespace trainsim::detail {

struct Env {
  const ModelConfig& m;
  const Settings& s;
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
  double host_fwd = 0, host_bwd = 0, host_recompute = 0, host_bwd_w = 0;  // host seconds to issue them
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
    host_fwd += o.host_fwd * k;
    host_bwd += o.host_bwd * k;
    host_recompute += o.host_recompute * k;
    host_bwd_w += o.host_bwd_w * k;
  }
  /// Per-micro-batch pass times: recompute runs in the backward; a split backward leaves the
  /// weight gradients (and their collectives) to a pass of their own.
  [[nodiscard]] ChunkTimes times(bool split) const {
    ChunkTimes t;
    t.fwd = fwd + fwd_net;
    t.bwd = bwd + bwd_net + recompute + recompute_net;
    t.host_fwd = host_fwd;
    t.host_bwd = host_bwd + host_recompute;
    if (split) {
      t.bwd_weight = bwd_w + bwd_w_net;
      t.bwd -= t.bwd_weight;
      t.host_bwd_weight = host_bwd_w;
      t.host_bwd -= host_bwd_w;
    }
    return t;
  }
};

// Seconds of one collective: a NCCL collective on its group's network, or the flex dispatcher's
// DeepEP / HybridEP kernels (model/moe_dispatch.h deepep_time on the system's NVLink and
// inter-node links).
[[nodiscard]] double call_time(const Env& env, const CommCall& c);

// comm_sum of a non-empty list.
double comm_sum_of(const Env& env, const CommList& calls, std::array<double, kGroupCount>& by_group, int repeat);

// Sum of the calls' times; each is also added to `by_group` (`repeat` times). Most leaf phases
// have none: they cost a test, not a call.
inline double comm_sum(const Env& env, const CommList& calls, std::array<double, kGroupCount>& by_group,
                       int repeat = 1) {
  return calls.empty() ? 0 : comm_sum_of(env, calls, by_group, repeat);
}

// Compute slow-down while a collective on the group's network runs beside it.
[[nodiscard]] double contention(const Env& env, Group g);

// One leaf's costs for one micro-batch into `o` (a fresh op, built in place in its vector);
// `recomputed`: the leaf sits in a recomputed layer; `graphed`: a CUDA graph replays it (its
// memory-bound kernels pay their classes' graph floor).
void leaf_cost(OpCost& o, const Env& env, const Leaf& l, bool recomputed, const char* layer_type, int32_t layer,
               bool graphed = false);

[[nodiscard]] PhaseSums sums_of(const OpCost& o);

// moe_shared_expert_overlap: the EP time the shared expert hides, per leaf (forward, backward).
std::vector<std::array<double, 2>> overlap_shared_expert(const Env& env, const LayerTemplate& t,
                                                         std::vector<OpCost>& ops);

[[nodiscard]] BackwardSegment backward_segment(const std::vector<Leaf>& leaves, const PhaseSums& ps);

// A layer template with its costs, built and costed once per estimate (or once per cache) and
// shared by every chunk that uses it: its ops (with the exposed offload copy), the EP time
// moe_shared_expert_overlap hid per leaf (forward, backward; empty without that overlap), its
// phase sums, its backward segment and its efficiency lookups.
struct CostedLayer {
  std::shared_ptr<const LayerTemplate> layer;
  LayerKind kind;  // what it was built as (LayerStore)
  bool host_sync = false;  // an op of the layer is a sync point
  std::vector<OpCost> ops;
  std::vector<std::array<double, 2>> shared_hidden;
  PhaseSums sums;
  BackwardSegment backward;
  EfficiencyLog log;
};

[[nodiscard]] CostedLayer cost_layer(const Env& env, std::shared_ptr<const LayerTemplate> layer);

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
    if (env.mode == Mode::SimuMax12 && env.s.fuse.dropout) {
      compat_.emplace(env.s);
      compat_->fuse.dropout = false;
    }
  }
  /// The strategy the leaves are built with.
  [[nodiscard]] const Settings& strategy() const { return compat_ ? *compat_ : env_.s; }

  [[nodiscard]] std::shared_ptr<const LayerTemplate> layer(LayerKind k) {
    std::shared_ptr<const CostedLayer>& slot = k.mtp_vocab > 0 ? mtp_ : local_[k.moe][k.recompute][k.continues];
    if (slot && slot->kind == k) return slot->layer;
    if (!map_) {
      slot = build(k);
      return slot->layer;
    }
    std::string key = base_key_;
    key += {k.moe ? 'M' : 'D', k.recompute ? 'R' : '-', k.continues ? 'C' : '-'};
    if (k.mtp_vocab > 0) key.append(reinterpret_cast<const char*>(&k.mtp_vocab), sizeof k.mtp_vocab);
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
    if (mtp_ && mtp_->layer == t) return mtp_;
    return std::make_shared<const CostedLayer>(cost_layer(env_, t));
  }

 private:
  [[nodiscard]] std::shared_ptr<const CostedLayer> build(LayerKind k) const {
    auto t = std::make_shared<const LayerTemplate>(build_layer(env_.m, strategy(), k, chunk_env_));
    auto costed = std::make_shared<CostedLayer>(cost_layer(env_, std::move(t)));
    costed->kind = k;
    return costed;
  }

  const Env& env_;
  const ChunkEnv& chunk_env_;
  LayerMap* map_;
  const std::string& base_key_;
  std::optional<Settings> compat_;
  std::shared_ptr<const CostedLayer> local_[2][2][2];  // [moe][recompute][continues]
  std::shared_ptr<const CostedLayer> mtp_;             // the MTP layers' (mtp_vocab > 0)
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
void chunk_ops(ChunkOps& ops, const Env& env, const Chunk& c, const LayerStore& store);

// Chunk sums; `segments` receives the backward in backward order.
PhaseSums chunk_sums(const Chunk& c, const ChunkOps& ops, BackwardSegments& segments);

// The chunk's forward and backward cut at its EP all-to-alls (overlap_moe_expert_parallel_comm).
void a2a_passes(const Env& env, const Chunk& c, const ChunkOps& ops, A2aPass& fwd, A2aPass& bwd);

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
  // The forward cut at its sync points (compute/host_cost.h synced_pass); fwd_synced false: none.
  SyncedPass fwd_sync;
  bool fwd_synced = false;
};

// Fills the fresh result `r` with the chunk of `spec`.
void evaluate_chunk(ChunkResult& r, const Env& env, LayerStore& store, const ChunkSpec& spec, int64_t padded_vocab,
                    const ChunkEnv& chunk_env);

}  // namespace trainsim::detail
