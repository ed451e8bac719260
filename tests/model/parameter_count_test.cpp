// Parameter counts of published models: the figures their Hugging Face checkpoints report.
#include "model/parameter_count.h"

#include <gtest/gtest.h>

#include "test_estimate.h"

#include "inputs/hf_config.h"
#include "system/presets.h"

namespace trainsim {
namespace {

ModelConfig hf(const std::string& name, HfOptions o = {}) {
  const std::string path = std::string(TRAINSIM_TEST_DATA) + "/hf/" + name + "/config.json";
  return load_hf_config(read_file(path), path, o).model;
}

StrategyConfig pipeline(int64_t pp) {
  StrategyConfig s;
  s.pp_size = pp;
  return s;
}

struct Published {
  const char* name;
  int64_t total, active;
};

TEST(ParameterCount, PublishedModelsExactly) {
  const Published cases[] = {
      {"llama-2-7b", 6738415616, 6738415616},
      {"llama-3.1-8b", 8030261248, 8030261248},
      {"llama-3.2-1b", 1235814400, 1235814400},  // tied embeddings
      {"mistral-7b", 7241732096, 7241732096},
      {"qwen2.5-7b", 7615616512, 7615616512},    // qkv bias
      {"qwen3-8b", 8190735360, 8190735360},      // q/k norms
      {"mixtral-8x7b", 46702792704, 12879925248},
      {"qwen3-30b-a3b", 30532122624, 3353032704},
      {"deepseek-v3", 671026419200, 37552297472},  // without MTP
      {"deepseek-v2-lite", 15706484224, 2661150208},
      {"gpt-oss-20b", 20914757184, 4187440704},  // biases and attention sinks
  };
  for (const auto& c : cases) {
    const ParameterCount p = count_parameters(hf(c.name), pipeline(1));
    EXPECT_EQ(p.total, c.total) << c.name;
    EXPECT_EQ(p.active, c.active) << c.name;
  }
}

TEST(ParameterCount, DeepSeekV3MtpOnlyWhenAsked) {
  HfOptions o;
  o.mtp = true;
  const ParameterCount with = count_parameters(hf("deepseek-v3", o), pipeline(1));
  // One MTP layer: a MoE layer (11,507,286,272) + enorm, hnorm, final norm (3·7168) + eh_proj
  // (2·7168·7168 = 102,760,448).
  EXPECT_EQ(with.total - 671026419200, 11507286272 + 3 * 7168 + 102760448);
  EXPECT_EQ(with.stages.back().total - count_parameters(hf("deepseek-v3"), pipeline(1)).stages.back().total,
            11507286272 + 3 * 7168 + 102760448);
}

TEST(ParameterCount, PerStageSumsToTotalPlusTiedCopy) {
  // Llama 3.1 8B on pp 4: 8 layers per stage (218,112,000 each); embedding 525,336,576 on the
  // first stage, output layer + final norm (525,340,672) on the last.
  const ParameterCount p = count_parameters(hf("llama-3.1-8b"), pipeline(4));
  ASSERT_EQ(p.stages.size(), 4u);
  EXPECT_EQ(p.stages[0].total, 8 * 218112000LL + 525336576);
  EXPECT_EQ(p.stages[1].total, 8 * 218112000LL);
  EXPECT_EQ(p.stages[3].total, 8 * 218112000LL + 525340672);
  // Tied embeddings: the last stage holds its own copy of the embedding when pp > 1.
  const ParameterCount t = count_parameters(hf("llama-3.2-1b"), pipeline(2));
  EXPECT_EQ(t.stages[0].total + t.stages[1].total, t.total + t.embedding);
}

TEST(ParameterCount, InterleavedPipelineGivesEachRankItsChunks) {
  // pp 4 × 2 virtual stages of 4 layers: rank 0 holds layers 0-3 and 16-19, every rank 8 layers.
  StrategyConfig s = pipeline(4);
  s.interleaving_size = 2;
  const ParameterCount p = count_parameters(hf("llama-3.1-8b"), s);
  ASSERT_EQ(p.stages.size(), 4u);
  for (const auto& st : p.stages) EXPECT_EQ(st.layers, 8);
  EXPECT_EQ(p.stages[0].total, 8 * 218112000LL + 525336576);
}

TEST(ParameterCount, DenseLayersFollowTheGlobalOrder) {
  // DeepSeek-V3 (61 layers) on pp 8 split 5 + 7·8: the first stage holds the 3 dense
  // layers (583,483,392 each), 2 MoE layers and the embedding (129280·7168).
  StrategyConfig s = pipeline(8);
  s.num_layers_in_first_pipeline_stage = 5;
  const ParameterCount p = count_parameters(hf("deepseek-v3"), s);
  ASSERT_EQ(p.stages.size(), 8u);
  EXPECT_EQ(p.stages[0].layers, 5);
  EXPECT_EQ(p.stages[0].total, 3 * 583483392LL + 2 * 11507286272LL + 926679040);
}

}  // namespace
}  // namespace trainsim
