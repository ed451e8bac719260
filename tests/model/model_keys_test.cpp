// Model keys that change costs in the default mode: tied embeddings and per-head q/k norms.
#include <gtest/gtest.h>

#include "inputs/strategy_config.h"
#include "test_estimate.h"
#include "comm/collective.h"
#include "estimate/estimate.h"
#include "model/graph.h"
#include "test_presets.h"

namespace trainsim {
namespace {

StrategyConfig tp1() {
  StrategyConfig s;
  s.seq_len = 4096;
  s.micro_batch_size = 1;
  s.micro_batch_num = 1;
  return s;
}

double param_of(const std::vector<Leaf>& leaves, const std::string& name) {
  for (const auto& l : leaves)
    if (l.name == name) return l.params;
  return -1;
}

TEST(ModelKeys, TiedEmbeddingsShareTheOutputWeight) {
  ModelConfig m = test::preset_model("qwen3-8b");
  m.tie_word_embeddings = true;
  const ChunkSpec both{true, true, 1, 0, 0};
  // One stage holds embedding and head: one 151936·4096 matrix, the output layer adds nothing.
  EXPECT_DOUBLE_EQ(param_of(build_chunk(m, tp1(), 151936, both).post, "output_layer"), 0.0);
  // SimuMax v1.2 counts both; a head-only stage keeps its copy.
  const ChunkEnv compat{8, 1, Mode::SimuMax12};
  EXPECT_DOUBLE_EQ(param_of(build_chunk(m, tp1(), 151936, both, compat).post, "output_layer"), 151936.0 * 4096);
  EXPECT_DOUBLE_EQ(param_of(build_chunk(m, tp1(), 151936, ChunkSpec{false, true, 1, 0, 0}).post, "output_layer"),
                   151936.0 * 4096);
}

// With pp > 1 a tied embedding's two copies all-reduce their fp32 gradients after the backward
// (Megatron's embedding group): 151936·4096·4 B = 2,489,319,424 B over the first and last stage.
TEST(ModelKeys, TiedEmbeddingGradientsAllReduceOverThePipeline) {
  ModelConfig m = test::preset_model("qwen3-8b");
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  StrategyConfig s = tp1();
  s.pp_size = 2;
  s.world_size = 2;
  s.micro_batch_num = 4;
  const Estimate untied = estimate(m, s, sys);
  m.tie_word_embeddings = true;
  const Estimate tied = estimate(m, s, sys);
  const double x = collective_time(sys, s, choose_networks(sys, s, Mode::Default).of(Group::PP), Collective::AllReduce,
                                   2489319424.0, 2, "pp");
  ASSERT_EQ(tied.stage_times.size(), 2u);
  for (size_t i = 0; i < 2; ++i)
    EXPECT_NEAR(tied.stage_times[i].dp_comm_s - untied.stage_times[i].dp_comm_s, x, 1e-12);
  EXPECT_GT(x, 0.0);
}

TEST(ModelKeys, QkLayerNormIsAMemoryPass) {
  ModelConfig m = test::preset_model("qwen3-8b");
  m.qk_layernorm = true;
  const Chunk c = build_chunk(m, tp1(), 151936, ChunkSpec{false, false, 1, 0, 0});
  const Leaf* qk = nullptr;
  for (const auto& l : c.templates.at(0)->leaves)
    if (l.name == "qk_layernorm") qk = &l;
  ASSERT_NE(qk, nullptr);
  // q and k of (32 + 8) heads of 128 over 4096 tokens, 2 B: X = 41,943,040 B; read + write.
  EXPECT_DOUBLE_EQ(qk->kernels[kFwd][0].bytes, 2 * 41943040.0);
  EXPECT_DOUBLE_EQ(qk->cache, 41943040.0);
  EXPECT_DOUBLE_EQ(qk->params, 256.0);
  m.qk_layernorm = false;
  const Chunk plain = build_chunk(m, tp1(), 151936, ChunkSpec{false, false, 1, 0, 0});
  for (const auto& l : plain.templates.at(0)->leaves) EXPECT_NE(l.name, "qk_layernorm");
}

}  // namespace
}  // namespace trainsim
