// Layer templates are built and costed once per estimate (and once per estimate cache) and
// shared by every chunk that uses them. Sharing changes no figure: a chunk composed from shared
// templates equals one built on its own, and an estimate whose templates come from earlier
// estimates equals a cold one, bit for bit.
#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "inputs/strategy_config.h"
#include "test_estimate.h"
#include "estimate/estimate.h"
#include "memory/activation.h"
#include "model/graph.h"
#include "plan/plan.h"
#include "test_presets.h"
#include "test_same_estimate.h"

namespace trainsim {
namespace {

struct Case {
  const char* name;
  ModelConfig m;
  StrategyConfig s;
  Mode mode = Mode::Default;
};

StrategyConfig base(int64_t pp) {
  StrategyConfig s;
  s.seq_len = 4096;
  s.micro_batch_size = 1;
  s.micro_batch_num = 8;
  s.world_size = 8;
  s.tp_size = 2;
  s.pp_size = pp;
  return s;
}

ModelConfig layers(const char* preset, int64_t n) {
  ModelConfig m = test::preset_model(preset);
  m.layer_num = n;
  return m;
}

// pp 1 / 2 / 4, interleaving, MoE with a leading dense layer, MTP, recompute units and partial
// recompute.
std::vector<Case> cases() {
  std::vector<Case> out;
  out.push_back({"pp1", layers("llama3-8b", 4), base(1)});
  out.push_back({"pp2", layers("llama3-8b", 8), base(2)});
  out.push_back({"pp4", layers("llama3-8b", 8), base(4)});
  out.push_back({"pp4 compat", layers("llama3-8b", 8), base(4), Mode::SimuMax12});
  StrategyConfig vpp = base(2);
  vpp.num_layers_per_virtual_pipeline_stage = 1;
  out.push_back({"pp2 vpp4", layers("llama3-8b", 8), vpp});
  StrategyConfig moe = base(2);
  moe.tp_size = 1;
  moe.ep_size = 2;
  ModelConfig lite = layers("deepseek-v2-lite", 8);
  lite.dense_layers = 1;
  out.push_back({"moe dense first", lite, moe});
  StrategyConfig mtp = base(2);
  mtp.tp_size = 1;
  mtp.ep_size = 4;
  ModelConfig v3 = layers("deepseek-v3", 4);
  v3.dense_layers = 1;
  v3.mtp_num_layers = 1;
  out.push_back({"mtp", v3, mtp});
  StrategyConfig unit = base(2);
  unit.recompute_granularity = "full_block";
  unit.recompute_layer_num = 3;
  unit.recompute_unit_layers = 2;
  out.push_back({"recompute units", layers("llama3-8b", 8), unit});
  StrategyConfig partial = base(4);
  partial.recompute_granularity = "selective_recompute";
  partial.attn_recompute = true;
  partial.recompute_layer_num = 1;
  out.push_back({"partial recompute", layers("llama3-8b", 8), partial});
  return out;
}

void expect_same_leaves(const std::vector<Leaf>& a, const std::vector<Leaf>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].cache, b[i].cache);
    EXPECT_EQ(a[i].params, b[i].params);
    EXPECT_EQ(a[i].status, b[i].status);
    for (int ph = 0; ph < 3; ++ph) {
      ASSERT_EQ(a[i].kernels[ph].size(), b[i].kernels[ph].size());
      for (size_t k = 0; k < a[i].kernels[ph].size(); ++k) {
        EXPECT_EQ(a[i].kernels[ph][k].flops, b[i].kernels[ph][k].flops);
        EXPECT_EQ(a[i].kernels[ph][k].key, b[i].kernels[ph][k].key);
      }
    }
  }
}

// Every chunk of a plan (and the whole of each interleaved rank) from templates shared by all of
// them: the same leaves, liveness and parameters as the chunk built with its own templates, and
// one template per kind.
TEST(LayerStoreTest, SharedTemplatesComposeTheChunksBuiltAlone) {
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const Plan plan = keyed_plan(c.m, c.s, sys, c.mode);
    std::map<std::tuple<bool, bool, bool, int64_t>, std::shared_ptr<const LayerTemplate>> store;
    int builds = 0;
    const LayerSource source = [&](LayerKind k) {
      auto& t = store[{k.moe, k.recompute, k.continues, k.mtp_vocab}];
      if (!t) {
        ++builds;
        t = std::make_shared<const LayerTemplate>(build_layer(c.m, c.s, k, plan.chunk_env));
      }
      return t;
    };
    std::vector<ChunkSpec> specs;
    for (const auto& rank : plan.chunks) {
      ChunkSpec whole;
      for (const auto& spec : rank) {
        specs.push_back(spec);
        whole.embedding = whole.embedding || spec.embedding;
        whole.head = whole.head || spec.head;
        whole.layers += spec.layers;
        whole.dense_layers += spec.dense_layers;
        whole.recompute_layers += spec.recompute_layers;
        whole.mtp_layers += spec.mtp_layers;
      }
      specs.push_back(whole);
    }
    for (const ChunkSpec& spec : specs) {
      const Chunk alone = build_chunk(c.m, c.s, plan.padded_vocab, spec, plan.chunk_env);
      const Chunk shared = build_chunk(c.m, c.s, plan.padded_vocab, spec, plan.chunk_env, source);
      ASSERT_EQ(alone.templates.size(), shared.templates.size());
      for (size_t t = 0; t < alone.templates.size(); ++t) expect_same_leaves(alone.templates[t]->leaves, shared.templates[t]->leaves);
      ASSERT_EQ(alone.layers.size(), shared.layers.size());
      for (size_t i = 0; i < alone.layers.size(); ++i) {
        EXPECT_EQ(alone.layers[i].template_index, shared.layers[i].template_index);
        EXPECT_EQ(alone.layers[i].recompute, shared.layers[i].recompute);
      }
      const ActivationResult a = walk_activations(alone, c.s), b = walk_activations(shared, c.s);
      EXPECT_EQ(a.cache_per_mb, b.cache_per_mb);
      EXPECT_EQ(a.peak.peak, b.peak.peak);
      EXPECT_EQ(a.peak.slot, b.peak.slot);
      EXPECT_EQ(a.peak.peak_leaf, b.peak.peak_leaf);
      const StaticMemory pa = chunk_parameters(alone), pb = chunk_parameters(shared);
      EXPECT_EQ(pa.dense_params, pb.dense_params);
      EXPECT_EQ(pa.moe_params, pb.moe_params);
      EXPECT_EQ(pa.weight + pa.moe_weight, pb.weight + pb.moe_weight);
    }
    EXPECT_EQ(builds, static_cast<int>(store.size()));
  }
}

// An estimate whose templates (and chunks) come from a cache filled by every other case, in
// either order, equals the cold estimate of the plan alone.
TEST(LayerStoreTest, TemplatesFromEarlierEstimatesChangeNothing) {
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  const std::vector<Case> all = cases();
  for (bool reverse : {false, true}) {
    EstimateCache cache;
    for (size_t k = 0; k < all.size(); ++k) {
      const Case& c = all[reverse ? all.size() - 1 - k : k];
      SCOPED_TRACE(c.name);
      const Plan plan = keyed_plan(c.m, c.s, sys, c.mode);
      test::expect_same(estimate(plan), estimate(plan, &cache));
    }
  }
}

// pp 4: the first, middle and last chunks are three cache misses built from one template; a
// recomputed layer per chunk adds the recomputed kind. Another pipeline split of the same
// layers reuses the templates (only the chunk specs are new).
TEST(LayerStoreTest, EachTemplateBuiltOncePerCache) {
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  const ModelConfig m = layers("llama3-8b", 8);
  EstimateCache cache;
  (void)estimate(keyed_plan(m, base(4), sys, Mode::Default), &cache);
  EXPECT_EQ(cache.misses(), 3);
  EXPECT_EQ(cache.layer_builds(), 1);
  (void)estimate(keyed_plan(m, base(2), sys, Mode::Default), &cache);
  EXPECT_EQ(cache.misses(), 5);
  EXPECT_EQ(cache.layer_builds(), 1);
  StrategyConfig rc = base(4);
  rc.recompute_granularity = "full_block";
  rc.recompute_layer_num = 1;
  (void)estimate(keyed_plan(m, rc, sys, Mode::Default), &cache);
  EXPECT_EQ(cache.misses(), 8);
  EXPECT_EQ(cache.layer_builds(), 3);  // the strategy differs: a plain and a recomputed template
  // Interleaved pp 2 × 4 virtual chunks of one layer and the two whole ranks: one template.
  StrategyConfig vpp = base(2);
  vpp.num_layers_per_virtual_pipeline_stage = 1;
  EstimateCache fresh;
  (void)estimate(keyed_plan(m, vpp, sys, Mode::Default), &fresh);
  EXPECT_EQ(fresh.layer_builds(), 1);
  // MoE with a leading dense layer, MTP on the last stage: the dense, MoE and MTP templates.
  StrategyConfig ep = base(2);
  ep.tp_size = 1;
  ep.ep_size = 4;
  ModelConfig v3 = layers("deepseek-v3", 4);
  v3.dense_layers = 1;
  v3.mtp_num_layers = 1;
  EstimateCache moe;
  (void)estimate(keyed_plan(v3, ep, sys, Mode::Default), &moe);
  EXPECT_EQ(moe.misses(), 2);
  EXPECT_EQ(moe.layer_builds(), 3);
  // Without a pipeline: one new chunk (embedding, layers, head and MTP), the same three templates.
  StrategyConfig whole = ep;
  whole.pp_size = 1;
  (void)estimate(keyed_plan(v3, whole, sys, Mode::Default), &moe);
  EXPECT_EQ(moe.misses(), 3);
  EXPECT_EQ(moe.layer_builds(), 3);
}

}  // namespace
}  // namespace trainsim
