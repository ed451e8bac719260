// Activation liveness of one micro-batch through a chunk, with recompute segments
// (the peer's LLMModel.compute_activations), and static memory of a chunk.
#pragma once

#include <array>
#include <string_view>
#include <vector>

#include "plan/settings.h"
#include "model/graph.h"

namespace trainsim {

/// Peak bookkeeping in the peer's style: a stage slot records a value only when it raises (or
/// ties) the overall peak, so slots are "last overall raise in that stage".
struct PeakPoint {
  enum Stage { kForward = 0, kBackward = 1, kRecomputeForward = 2, kRecomputeBackward = 3 };
  double peak = 0;
  double peak_live = 0;  // of the peak, the saved activations live then (the rest: the op's transient)
  std::array<double, 4> slot{};
  std::array<double, 4> slot_live{};  // of each slot, the saved activations live then
  int peak_stage = kForward;
  std::string_view peak_leaf;  // a leaf name (static text, see Leaf::name)
  /// `live`: saved activations held; `transient`: the running op's working memory beyond them.
  void update(double live, double transient, Stage st, std::string_view leaf) {
    const double v = live + transient;
    if (v >= peak) {
      peak = v;
      peak_live = live;
      slot[st] = v;
      slot_live[st] = live;
      peak_stage = st;
      peak_leaf = leaf;
    }
  }
};

struct ActivationResult {
  double cache_per_mb = 0;  // live bytes after the forward pass (saved for backward)
  double offloaded_per_mb = 0;  // saved bytes held in host memory instead (activation offloading)
  PeakPoint peak;
};

/// Walks the chunk's leaves forward then backward (recomputing segments) for one micro-batch.
[[nodiscard]] ActivationResult walk_activations(const Chunk& chunk, const Settings& s);

/// Weights, gradients and optimizer states of a chunk (bytes per rank) before TE dummy buffers.
struct StaticMemory {
  double dense_params = 0, moe_params = 0;
  double weight = 0, grad = 0, state = 0;
  double moe_weight = 0, moe_grad = 0, moe_state = 0;
  [[nodiscard]] double total() const { return weight + grad + state + moe_weight + moe_grad + moe_state; }
};
[[nodiscard]] StaticMemory static_memory(const Chunk& chunk, const Settings& s);
/// Parameter counts and weight bytes of a chunk per rank (no gradients, states or sharding).
[[nodiscard]] StaticMemory chunk_parameters(const Chunk& chunk);
/// Adds gradients and optimizer states to `params` and applies the ZeRO sharding of `s`.
[[nodiscard]] StaticMemory shard_static_memory(StaticMemory params, const Settings& s);

/// Bytes of the chunk's TE dummy-wgrad buffers: one bf16 buffer per distinct (rows, cols, grouped)
/// weight-gradient shape.
[[nodiscard]] double dummy_wgrad_bytes(const Chunk& chunk);

}  // namespace trainsim
