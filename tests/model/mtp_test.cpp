// Multi-token prediction layers: on the last pipeline stage, with their compute and memory.
#include <gtest/gtest.h>

#include "inputs/strategy_config.h"
#include "test_estimate.h"
#include "estimate/estimate.h"
#include "model/graph.h"
#include "plan/plan.h"
#include "test_presets.h"

namespace trainsim {
namespace {

ModelConfig v3_mtp() {
  ModelConfig m = test::preset_model("deepseek-v3");
  m.mtp_num_layers = 1;
  return m;
}

StrategyConfig pp2() {
  StrategyConfig s;
  s.seq_len = 4096;
  s.micro_batch_size = 1;
  s.micro_batch_num = 8;
  s.world_size = 8;
  s.pp_size = 2;
  s.ep_size = 4;
  s.num_layers_in_first_pipeline_stage = 30;
  return s;
}

TEST(MultiTokenPrediction, LastStageHoldsTheMtpLayers) {
  const ModelConfig m = v3_mtp();
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  const Plan p = resolve_plan(m, pp2(), sys, Mode::Default);
  EXPECT_EQ(p.chunks[0][0].mtp_layers, 0);
  EXPECT_EQ(p.chunks[1][0].mtp_layers, 1);
  // SimuMax v1.2 only counts their parameters.
  EXPECT_EQ(resolve_plan(m, pp2(), sys, Mode::SimuMax12).chunks[1][0].mtp_layers, 0);
}

TEST(MultiTokenPrediction, LayerLeavesAndEmbeddingCopy) {
  const ModelConfig m = v3_mtp();
  const StrategyConfig s = pp2();
  const Chunk c = build_chunk(m, s, 129280, ChunkSpec{false, true, 1, 0, 0, 1});
  ASSERT_EQ(c.layers.size(), 2u);  // one decoder layer, one MTP layer
  const auto& mtp = c.templates.at(static_cast<size_t>(c.layers[1].template_index))->leaves;
  EXPECT_EQ(mtp.front().name, "mtp.embedding");
  EXPECT_EQ(mtp.back().name, "mtp.cross_entropy");
  // eh_proj: 2H → H = 2·7168·7168 weights; the output layer shares the head's weight.
  double eh = 0, head = -1;
  for (const auto& l : mtp) {
    if (l.name == "mtp.eh_proj") eh = l.params;
    if (l.name == "mtp.output_layer") head = l.params;
  }
  EXPECT_DOUBLE_EQ(eh, 2.0 * 7168 * 7168);
  EXPECT_DOUBLE_EQ(head, 0.0);
  // A stage without the embedding keeps a copy of its 129280·7168 weights for the lookups.
  ASSERT_EQ(c.post.back().name, "mtp.embedding_weights");
  EXPECT_DOUBLE_EQ(c.post.back().params, 129280.0 * 7168);
}

TEST(MultiTokenPrediction, CostsTimeAndMemoryOnTheLastStage) {
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  ModelConfig without = v3_mtp();
  without.mtp_num_layers = 0;
  const Estimate a = estimate(without, pp2(), sys), b = estimate(v3_mtp(), pp2(), sys);
  ASSERT_EQ(b.stages.size(), 2u);
  EXPECT_EQ(a.stages[0].model_bytes, b.stages[0].model_bytes);
  EXPECT_GT(b.stages[1].model_bytes, a.stages[1].model_bytes);
  EXPECT_GT(b.stage_times[1].fwd_per_mb_s, a.stage_times[1].fwd_per_mb_s);
  EXPECT_EQ(b.stage_times[0].fwd_per_mb_s, a.stage_times[0].fwd_per_mb_s);
}

}  // namespace
}  // namespace trainsim
