// The liveness walk reads a chunk's leaves in place (recompute segments may cross layers): it
// gives, bit for bit, what a walk over the leaves copied into one list in call order gives.
#include <gtest/gtest.h>

#include <vector>

#include "inputs/strategy_config.h"
#include "memory/activation.h"
#include "model/graph.h"
#include "plan/plan.h"
#include "test_presets.h"

namespace trainsim {
namespace {

// The walk over one flat list of the chunk's leaves (the peer's compute_activations).
ActivationResult flat_walk(const Chunk& chunk, const StrategyConfig& s) {
  struct Item {
    const Leaf* leaf;
    bool rc;
    double keep = 0;
  };
  std::vector<Item> items;
  for (const auto& l : chunk.pre) items.push_back({&l, false});
  for (const auto& layer : chunk.layers)
    for (const auto& l : chunk.templates[static_cast<size_t>(layer.template_index)]->leaves)
      items.push_back({&l, layer.recompute && s.enable_recompute && l.recompute});
  for (const auto& l : chunk.post) items.push_back({&l, false});
  auto cache_of = [](const Item& it) {
    return it.leaf->has_cached_inputs && it.rc ? it.leaf->cache_inputs_cached : it.leaf->cache;
  };
  ActivationResult r;
  PeakPoint& pk = r.peak;
  double G = 0;
  for (Item& it : items) {
    const Leaf& l = *it.leaf;
    pk.update(G, l.fpk, PeakPoint::kForward, l.name);
    if (it.rc) {
      const bool input_kept = l.status == RecomputeStatus::First && !(s.offload_groupgemm_col_inputs && l.grouped);
      it.keep = input_kept ? l.input_bytes : 0;
    } else {
      it.keep = cache_of(it);
      r.offloaded_per_mb += l.offload_bytes;
    }
    G += it.keep;
  }
  pk.update(G, 0, PeakPoint::kForward, "forward_end");
  r.cache_per_mb = G;
  for (size_t ii = items.size(); ii-- > 0;) {
    if (!items[ii].rc) {
      pk.update(G, items[ii].leaf->bpk, PeakPoint::kBackward, items[ii].leaf->name);
      G -= items[ii].keep;
      continue;
    }
    size_t j = ii;
    while (j > 0 && items[j].leaf->status != RecomputeStatus::First && items[j - 1].rc) --j;
    for (size_t k = j; k <= ii; ++k) {
      pk.update(G, items[k].leaf->fpk, PeakPoint::kRecomputeForward, items[k].leaf->name);
      if (k != j) {
        items[k].keep = cache_of(items[k]);
        G += items[k].keep;
      }
    }
    for (size_t k = ii + 1; k-- > j;) {
      pk.update(G, items[k].leaf->bpk, PeakPoint::kRecomputeBackward, items[k].leaf->name);
      G -= items[k].keep;
    }
    ii = j;
  }
  return r;
}

StrategyConfig base() {
  StrategyConfig s;
  s.seq_len = 4096;
  s.micro_batch_size = 1;
  s.micro_batch_num = 8;
  s.world_size = 8;
  s.tp_size = 2;
  s.pp_size = 2;
  return s;
}

TEST(ActivationWalkTest, InPlaceWalkEqualsTheFlatWalk) {
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  ModelConfig dense = test::preset_model("llama3-8b");
  dense.layer_num = 8;
  ModelConfig moe = test::preset_model("deepseek-v2-lite");
  moe.layer_num = 8;
  moe.dense_layers = 1;
  struct Case {
    const char* name;
    const ModelConfig* m;
    StrategyConfig s;
  };
  std::vector<Case> cases;
  cases.push_back({"none", &dense, base()});
  for (int64_t unit : {1, 2, 3}) {
    StrategyConfig s = base();
    s.recompute_granularity = "full_block";
    s.recompute_layer_num = 3;
    s.recompute_unit_layers = unit;
    cases.push_back({"full_block units", &dense, s});
  }
  StrategyConfig sel = base();
  sel.recompute_granularity = "selective_recompute";
  sel.attn_recompute = true;
  sel.mlp_recompute = true;
  sel.mlp_rms_recompute = true;
  sel.recompute_layer_num = 2;
  cases.push_back({"selective", &dense, sel});
  StrategyConfig off = sel;
  off.enable_recompute = false;
  cases.push_back({"recompute disabled", &dense, off});
  StrategyConfig ep = base();
  ep.tp_size = 1;
  ep.ep_size = 2;
  ep.recompute_granularity = "full_block";
  ep.recompute_layer_num = 2;
  ep.offload_groupgemm_col_inputs = false;
  cases.push_back({"moe full_block", &moe, ep});
  StrategyConfig mods = base();
  mods.tp_size = 1;
  mods.ep_size = 2;
  mods.megatron_recompute = true;
  mods.recompute_granularity = "selective_recompute";
  mods.megatron_recompute_modules = {"layernorm", "moe_act", "moe"};
  mods.recompute_layer_num = 4;
  cases.push_back({"moe megatron modules", &moe, mods});
  int walked = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Plan plan = resolve_plan(*c.m, c.s, sys, Mode::Default);
    for (const auto& rank : plan.chunks)
      for (const ChunkSpec& spec : rank) {
        const Chunk chunk = build_chunk(*c.m, c.s, plan.padded_vocab, spec, plan.chunk_env);
        const ActivationResult a = walk_activations(chunk, c.s), b = flat_walk(chunk, c.s);
        EXPECT_EQ(a.cache_per_mb, b.cache_per_mb);
        EXPECT_EQ(a.offloaded_per_mb, b.offloaded_per_mb);
        EXPECT_EQ(a.peak.peak, b.peak.peak);
        EXPECT_EQ(a.peak.slot, b.peak.slot);
        EXPECT_EQ(a.peak.peak_stage, b.peak.peak_stage);
        EXPECT_EQ(a.peak.peak_leaf, b.peak.peak_leaf);
        EXPECT_GT(a.peak.peak, 0);
        ++walked;
      }
  }
  EXPECT_EQ(walked, 2 * 8);
}

}  // namespace
}  // namespace trainsim
