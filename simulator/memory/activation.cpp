// Activation liveness walk and static memory.
#include "memory/activation.h"

#include <algorithm>

#include "core/error.h"
#include "core/small_vector.h"

namespace trainsim {
namespace {

struct Item {
  const Leaf* leaf;
  bool rc;         // recomputed in this instance
  double keep = 0;  // bytes it keeps for the backward
};

// The chunk's leaves in call order, into a per-thread buffer that every walk reuses (searches walk
// chunks on several threads).
std::vector<Item>& flatten(const Chunk& chunk, const StrategyConfig& s) {
  thread_local std::vector<Item> items;
  items.clear();
  size_t n = chunk.pre.size() + chunk.post.size();
  for (const auto& layer : chunk.layers) n += chunk.templates[static_cast<size_t>(layer.template_index)]->leaves.size();
  items.reserve(n);
  for (const auto& l : chunk.pre) items.push_back({&l, false});
  for (const auto& layer : chunk.layers)
    for (const auto& l : chunk.templates[static_cast<size_t>(layer.template_index)]->leaves)
      items.push_back({&l, layer.recompute && s.enable_recompute && l.recompute});
  for (const auto& l : chunk.post) items.push_back({&l, false});
  return items;
}

double cache_of(const Item& it) {
  return it.leaf->has_cached_inputs && it.rc ? it.leaf->cache_inputs_cached : it.leaf->cache;
}

}  // namespace

ActivationResult walk_activations(const Chunk& chunk, const StrategyConfig& s) {
  std::vector<Item>& items = flatten(chunk, s);
  const size_t n = items.size();
  ActivationResult r;
  PeakPoint& pk = r.peak;
  constexpr std::string_view kForwardEnd = "forward_end";
  double G = 0;
  for (size_t i = 0; i < n; ++i) {
    const Leaf& l = *items[i].leaf;
    pk.update(G + l.fpk, PeakPoint::kForward, l.name);
    if (items[i].rc) {
      // Checkpointed segment: only its input is kept (none if the input is offloaded).
      items[i].keep = l.status == RecomputeStatus::First && !(s.offload_groupgemm_col_inputs && l.grouped)
                          ? l.input_bytes
                          : 0;
    } else {
      items[i].keep = cache_of(items[i]);
      r.offloaded_per_mb += l.offload_bytes;
    }
    G += items[i].keep;
  }
  pk.update(G, PeakPoint::kForward, kForwardEnd);
  r.cache_per_mb = G;
  for (size_t ii = n; ii-- > 0;) {
    const Leaf& l = *items[ii].leaf;
    if (!items[ii].rc) {
      pk.update(G + l.bpk, PeakPoint::kBackward, l.name);
      G -= items[ii].keep;
      continue;
    }
    size_t j = ii;
    while (j > 0 && items[j].leaf->status != RecomputeStatus::First && items[j - 1].rc) --j;
    for (size_t k = j; k <= ii; ++k) {
      const Leaf& lk = *items[k].leaf;
      pk.update(G + lk.fpk, PeakPoint::kRecomputeForward, lk.name);
      if (k != j) {
        items[k].keep = cache_of(items[k]);
        G += items[k].keep;
      }
    }
    for (size_t k = ii + 1; k-- > j;) {
      const Leaf& lk = *items[k].leaf;
      pk.update(G + lk.bpk, PeakPoint::kRecomputeBackward, lk.name);
      G -= items[k].keep;
    }
    ii = j;
  }
  return r;
}

StaticMemory chunk_parameters(const Chunk& chunk) {
  StaticMemory m;
  auto add = [&](const Leaf& l) {
    if (l.params == 0) return;
    if (l.moe_params) {
      m.moe_params += l.params;
      m.moe_weight += l.params * l.weight_elem_bytes;
    } else {
      m.dense_params += l.params;
      m.weight += l.params * l.weight_elem_bytes;
    }
  };
  for (const auto& l : chunk.pre) add(l);
  for (const auto& l : chunk.post) add(l);
  for (const auto& layer : chunk.layers)
    for (const auto& l : chunk.templates[static_cast<size_t>(layer.template_index)]->leaves) add(l);
  return m;
}

StaticMemory shard_static_memory(StaticMemory m, const StrategyConfig& s) {
  const double mg = (s.grad_reduce_in_bf16 || !s.use_fp32_accum_grad) ? 2 : 4;
  m.grad = m.dense_params * mg;
  m.state = m.dense_params * 12;  // fp32 master weight + Adam m and v
  m.moe_grad = m.moe_params * mg;
  m.moe_state = m.moe_params * 12;
  // ZeRO: 1 shards optimizer states, 2 also gradients, 3 also weights (dense over dp·cp,
  // expert parameters over edp).
  const double dpcp = static_cast<double>(s.dp_size() * s.cp_size), edp = static_cast<double>(s.edp_size());
  if (s.zero_state >= 1) {
    m.state /= dpcp;
    m.moe_state /= edp;
  }
  if (s.zero_state >= 2) {
    m.grad /= dpcp;
    m.moe_grad /= edp;
  }
  if (s.zero_state >= 3) {
    m.weight /= dpcp;
    m.moe_weight /= edp;
  }
  return m;
}

StaticMemory static_memory(const Chunk& chunk, const StrategyConfig& s) {
  return shard_static_memory(chunk_parameters(chunk), s);
}

double dummy_wgrad_bytes(const Chunk& chunk) {
  SmallVector<std::array<int64_t, 3>, 8> shapes;  // (rows, cols, grouped) seen
  double bytes = 0;
  auto add = [&](const Leaf& l) {
    if (l.dummy_wgrad_bytes == 0) return;
    const std::array<int64_t, 3> key{l.dummy_rows, l.dummy_cols, l.grouped ? 1 : 0};
    if (std::find(shapes.begin(), shapes.end(), key) != shapes.end()) return;
    shapes.push_back(key);
    bytes += static_cast<double>(key[0]) * static_cast<double>(key[1]) * 2;
  };
  for (const auto& l : chunk.pre) add(l);
  for (const auto& t : chunk.templates)
    for (const auto& l : t->leaves) add(l);
  for (const auto& l : chunk.post) add(l);
  return bytes;
}

}  // namespace trainsim
