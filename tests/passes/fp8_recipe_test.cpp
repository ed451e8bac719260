// fp8 recipes (fp8_recipe, fp8_param_gather): the weight bytes Megatron with TransformerEngine
// keeps per Linear parameter, hand-computed on a small GPT layer: h 1024, 8 heads of 128, GELU MLP
// of 4096, no Linear biases. Its Linear weights hold 3 + 1 + 4 + 4 = 12 Mi parameters (qkv
// 1024×3072, proj 1024×1024, fc1 1024×4096, fc2 4096×1024); four layers 48 Mi. In bf16 each takes
// 2 bytes, so a recipe adds 48 Mi × (bytes − 2) to the chunk's weights.
#include <gtest/gtest.h>

#include "comm/collective.h"
#include "config/validate.h"
#include "estimate/estimate.h"
#include "core/units.h"
#include "memory/activation.h"
#include "model/graph.h"
#include "passes/fp8.h"
#include "plan/plan.h"
#include "test_errors.h"
#include "test_presets.h"

namespace trainsim {
namespace {

ModelConfig gpt_small() {
  return load_model(R"({"model_type": "dense", "model_name": "gpt_small", "hidden_size": 1024, "head_num": 8,
                        "kv_head_num": 8, "head_size": 128, "intermediate_size": 4096, "layer_num": 4,
                        "vocab_size": 1024, "use_swiglu": false})",
                    "gpt_small.json");
}

StrategyConfig strategy(const std::string& extra) {
  return load_strategy(R"({"seq_len": 2048, "micro_batch_size": 1, "micro_batch_num": 1, "world_size": 1)" +
                           (extra.empty() ? "" : ", " + extra) + "}",
                       "s.json");
}

// Weight bytes of the four layers (no embedding, no head), in MiB.
double layer_weights_mib(const std::string& extra, bool blackwell, Mode mode = Mode::Default) {
  const ModelConfig m = gpt_small();
  const StrategyConfig s = strategy(extra);
  const Plan plan = resolve_plan(m, s, test::preset_system(blackwell ? "b200-sxm-180g" : "h100-sxm-80g"), mode);
  ChunkSpec spec = plan.chunks[0][0];
  spec.embedding = spec.head = false;
  const ChunkEnv env{.mode = mode, .blackwell = blackwell};
  return chunk_parameters(build_chunk(m, s, plan.padded_vocab, spec, env)).weight / kMiB;
}

// Per parameter: bf16 parameter 2 B (0 with fp8_param_gather) + TE's copies.
// delayed/tensorwise: fp8 1 B, + its transpose 1 B on Hopper → 4 (Blackwell 3);
// blockwise: row- and column-wise 1 B each + one fp32 scale per 128·128 each → 4 + 8/16384;
// mxfp8: row- and column-wise 1 B each + one E8M0 byte per 32 each → 4 + 2/32.
TEST(Fp8Recipe, WeightBytesPerParameter) {
  EXPECT_DOUBLE_EQ(fp8_weight_bytes("delayed", false, false), 4);
  EXPECT_DOUBLE_EQ(fp8_weight_bytes("tensorwise", false, false), 4);
  EXPECT_DOUBLE_EQ(fp8_weight_bytes("delayed", false, true), 3);
  EXPECT_DOUBLE_EQ(fp8_weight_bytes("blockwise", false, false), 4 + 8.0 / 16384);
  EXPECT_DOUBLE_EQ(fp8_weight_bytes("mxfp8", false, true), 4.0625);
  EXPECT_DOUBLE_EQ(fp8_weight_bytes("delayed", true, false), 2);
  EXPECT_DOUBLE_EQ(fp8_weight_bytes("mxfp8", true, true), 2.0625);
}

// 48 Mi Linear parameters: Hopper delayed adds 48 × 2 = 96 MiB over bf16, Blackwell (no transpose)
// 48 MiB; blockwise 48 × (2 + 8/16384) = 96 + 3/128 MiB; mxfp8 48 × 2.0625 = 99 MiB;
// fp8_param_gather drops the bf16 copy: delayed on Hopper adds 0, mxfp8 48 × 0.0625 = 3 MiB.
// SimuMax v1.2 counts 1 byte per fp8 weight: 48 MiB less than bf16.
TEST(Fp8Recipe, DefaultModeKeepsBf16ParametersAndTheQuantisedCopies) {
  const double bf16 = layer_weights_mib("", false);
  EXPECT_DOUBLE_EQ(layer_weights_mib(R"("fp8": true)", false) - bf16, 96);
  EXPECT_DOUBLE_EQ(layer_weights_mib(R"("fp8": true, "fp8_recipe": "tensorwise")", false) - bf16, 96);
  EXPECT_DOUBLE_EQ(layer_weights_mib(R"("fp8": true)", true) - bf16, 48);
  EXPECT_DOUBLE_EQ(layer_weights_mib(R"("fp8": true, "fp8_recipe": "blockwise")", false) - bf16, 96 + 3.0 / 128);
  EXPECT_DOUBLE_EQ(layer_weights_mib(R"("fp8": true, "fp8_recipe": "mxfp8")", true) - bf16, 99);
  EXPECT_DOUBLE_EQ(layer_weights_mib(R"("fp8": true, "fp8_param_gather": true)", false) - bf16, 0);
  EXPECT_DOUBLE_EQ(layer_weights_mib(R"("fp8": true, "fp8_recipe": "mxfp8", "fp8_param_gather": true)", true) - bf16,
                   3);
  EXPECT_DOUBLE_EQ(layer_weights_mib(R"("fp8": true)", false, Mode::SimuMax12) -
                       layer_weights_mib("", false, Mode::SimuMax12),
                   -48);
}

// The distributed optimizer gathers bf16 parameters (2 B), fp8 ones with fp8_param_gather (1 B).
TEST(Fp8Recipe, ParamGatherBytes) {
  EXPECT_DOUBLE_EQ(param_gather_bytes(strategy(R"("fp8": true)")), 2);
  EXPECT_DOUBLE_EQ(param_gather_bytes(strategy(R"("fp8": true, "fp8_param_gather": true)")), 1);
  EXPECT_TRUE(is_blackwell_system("gb200_nvl72"));
  EXPECT_TRUE(is_blackwell_system("B200-SXM"));
  EXPECT_FALSE(is_blackwell_system("h100_sxm_80g"));
}

// In a plan: Llama 3 8B cut to 8 layers with a 256-token vocabulary on 8 GPUs (dp 8, distributed
// optimizer) gathers all of a rank's P = 8 · 218,112,000 + 2 · 256 · 4096 + 4096 = 1,746,997,248
// parameters after the optimizer. A collective's time is linear in its bytes, so moving 1 byte per
// parameter instead of 2 saves t(2P) − t(P) of DP time; the gradient reduce-scatter is unchanged.
TEST(Fp8Recipe, Fp8ParamGatherHalvesTheParameterAllGather) {
  ModelConfig m = test::preset_model("llama3-8b");
  m.layer_num = 8;
  m.vocab_size = 256;
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  auto st = [](const char* extra) {
    return load_strategy(std::string(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 4,
        "world_size": 8, "zero_state": 1, "fp8": true, "enable_straggler_model": false,
        "enable_recompute": false)") + extra + "}",
                         "s.json");
  };
  const StrategyConfig bf16_gather = st(""), fp8_gather = st(R"(, "fp8_param_gather": true)");
  const double saved = estimate(m, bf16_gather, sys).stage_times[0].dp_comm_s -
                       estimate(m, fp8_gather, sys).stage_times[0].dp_comm_s;
  const double P = 1746997248;
  const std::string net = resolve_plan(m, bf16_gather, sys, Mode::Default).nets.of(Group::DP);
  const double expected = collective_time(sys, bf16_gather, net, Collective::AllGather, 2 * P, 8, "dp_cp") -
                          collective_time(sys, bf16_gather, net, Collective::AllGather, P, 8, "dp_cp");
  EXPECT_GT(expected, 0.004);  // 1.75 GB over NVLink: about 4.5 ms
  EXPECT_NEAR(saved, expected, 1e-9);
}

TEST(Fp8Recipe, SettingsThatCannotWorkAreErrors) {
  auto issues = [&](const std::string& extra, const char* sys, Mode mode) {
    std::string out;
    for (const auto& i : validate_plan(gpt_small(), strategy(extra), test::preset_system(sys), PlanSources{}, mode))
      out += i.source + " " + i.path + ": " + i.message + "\n";
    return out;
  };
  EXPECT_EQ(issues(R"("fp8_recipe": "blockwise", "fp8_param_gather": true)", "h100-sxm-80g", Mode::Default),
            "strategy /fp8_recipe: changes nothing without fp8; set fp8 to true or remove it\n"
            "strategy /fp8_param_gather: changes nothing without fp8; set fp8 to true or remove it\n");
  EXPECT_EQ(issues(R"("fp8": true, "fp8_recipe": "mxfp8")", "h100-sxm-80g", Mode::Default),
            "strategy /fp8_recipe: 'mxfp8' needs a Blackwell GPU (its MX block-scaled fp8 GEMMs); system "
            "'h100_sxm_80g' is not one (b200, gb200, b300); use 'blockwise', 'tensorwise' or 'delayed'\n");
  EXPECT_EQ(issues(R"("fp8": true, "fp8_recipe": "mxfp8")", "b200-sxm-180g", Mode::Default), "");
  EXPECT_EQ(issues(R"("fp8": true, "fp8_param_gather": true, "zero_state": 0)", "h100-sxm-80g", Mode::Default),
            "strategy /fp8_param_gather: needs the distributed optimizer, whose all-gather it makes fp8 (Megatron "
            "asserts it): set zero_state to 1, 2 or 3\n");
  EXPECT_EQ(issues(R"("fp8": true, "fp8_recipe": "tensorwise", "fp8_param_gather": true)", "h100-sxm-80g",
                   Mode::SimuMax12),
            "strategy /fp8_recipe: is not part of SimuMax v1.2 (its fp8 is the delayed recipe); remove it or use the "
            "default mode\n"
            "strategy /fp8_param_gather: is not part of SimuMax v1.2; remove it or use the default mode\n");
  EXPECT_EQ(test::error_of([] { (void)strategy(R"("fp8": true, "fp8_recipe": "custom")"); }),
            "s.json: /fp8_recipe: unknown value 'custom'; valid values: delayed, tensorwise, blockwise, mxfp8");
}

}  // namespace
}  // namespace trainsim
