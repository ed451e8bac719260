// MLA under tensor parallelism: replicated down projections, head-split up projections and
// attention, row-parallel output projection (Megatron MLASelfAttention).
#include <gtest/gtest.h>

#include "plan/validate.h"
#include "model/graph.h"
#include "test_presets.h"

namespace trainsim {
namespace {

const Leaf& leaf(const Chunk& c, const std::string& name) {
  for (const auto& l : c.templates.at(0)->leaves)
    if (l.name == name) return l;
  throw std::runtime_error("no leaf " + name);
}

StrategyConfig tp4() {
  StrategyConfig s;
  s.seq_len = 4096;
  s.micro_batch_size = 1;
  s.micro_batch_num = 8;
  s.world_size = 8;
  s.tp_size = 4;
  s.ep_size = 8;
  return s;
}

// DeepSeek-V3: H 7168, 128 heads, q_lora 1536, kv_lora 512, d_qk 128 + 64 rope, d_v 128.
TEST(MlaTensorParallel, ProjectionsSplitAsMegatron) {
  const ModelConfig m = test::preset_model("deepseek-v3");
  const Chunk c = build_chunk(m, tp4(), 129280, ChunkSpec{false, false, 1, 1, 0});
  // Down projections replicated: 7168·1536 and 7168·(512+64) weights on every rank, run on the
  // S/tp = 1024 local tokens: 2·1024·7168·1536 FLOPs, no TP collective.
  EXPECT_DOUBLE_EQ(leaf(c, "q_down_proj").params, 7168.0 * 1536);
  EXPECT_DOUBLE_EQ(leaf(c, "kv_down_proj").params, 7168.0 * 576);
  EXPECT_DOUBLE_EQ(leaf(c, "q_down_proj").kernels[kFwd][0].flops, 2.0 * 1024 * 7168 * 1536);
  EXPECT_TRUE(leaf(c, "q_down_proj").comms[kFwd].empty());
  // Up projections split by heads: 1536·128·192/4 weights; the latent (4096·1536·2 B) is
  // all-gathered before it.
  const Leaf& up = leaf(c, "q_up_proj");
  EXPECT_DOUBLE_EQ(up.params, 1536.0 * 128 * 192 / 4);
  ASSERT_EQ(up.comms[kFwd].size(), 1u);
  EXPECT_DOUBLE_EQ(up.comms[kFwd][0].bytes, 4096.0 * 1536 * 2);
  // Attention on 128/4 = 32 heads: 2·32·4096²·(192+128) FLOPs.
  EXPECT_DOUBLE_EQ(leaf(c, "core_attention").kernels[kFwd][0].flops, 2.0 * 32 * 4096 * 4096 * 320);
  // Output projection row-parallel: (128·128/4)·7168 weights, reduce-scatter of 4096·7168·2 B.
  const Leaf& proj = leaf(c, "linear_proj");
  EXPECT_DOUBLE_EQ(proj.params, 128.0 * 128 / 4 * 7168);
  ASSERT_EQ(proj.comms[kFwd].size(), 1u);
  EXPECT_EQ(proj.comms[kFwd][0].kind, Collective::ReduceScatter);
  EXPECT_DOUBLE_EQ(proj.comms[kFwd][0].bytes, 4096.0 * 7168 * 2);
}

TEST(MlaTensorParallel, AcceptedInDefaultModeOnly) {
  const ModelConfig m = test::preset_model("deepseek-v3");
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  const PlanSources src{"deepseek-v3", "s.json", "h100"};
  StrategyConfig s = tp4();
  s.pp_size = 1;
  EXPECT_TRUE(validate_plan(m, s, sys, src).empty());
  const auto compat = validate_plan(m, s, sys, src, Mode::SimuMax12);
  ASSERT_EQ(compat.size(), 1u);
  EXPECT_EQ(compat[0].str(), "s.json: /tp_size: SimuMax v1.2 models MLA attention with tp_size 1 only; valid "
                             "values: 1 (or use the default mode)");
}

}  // namespace
}  // namespace trainsim
