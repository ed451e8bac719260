// Megatron's recompute keys (recompute_granularity full | selective, recompute_method,
// recompute_num_layers, recompute_modules): how they lower onto the recompute pass, and the
// tensors one layer keeps, hand-computed from what Megatron saves.
#include <gtest/gtest.h>

#include <algorithm>

#include "plan/validate.h"
#include "core/units.h"
#include "memory/activation.h"
#include "model/graph.h"
#include "plan/plan.h"
#include "test_errors.h"
#include "test_presets.h"

namespace trainsim {
namespace {

using test::error_of;

// A small GPT layer: h 1024, 8 heads of 128, GELU MLP of 4096; s 2048, b 1, tp 1, bf16, flash.
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

// The liveness walk of one micro-batch through the 4 layers of the only chunk (no embedding, no head).
ActivationResult walk(const std::string& extra, Mode mode) {
  const ModelConfig m = gpt_small();
  const StrategyConfig s = strategy(extra);
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  const Plan plan = resolve_plan(m, s, sys, mode);
  ChunkSpec spec = plan.chunks[0][0];
  spec.embedding = spec.head = false;
  return walk_activations(build_chunk(m, s, plan.padded_vocab, spec, ChunkEnv{.mode = mode}), s);
}
// Saved bytes (MiB) and the liveness peak (MiB).
double cache_mib(const std::string& extra, Mode mode = Mode::Default) { return walk(extra, mode).cache_per_mb / kMiB; }
double peak_mib(const std::string& extra) { return walk(extra, Mode::Default).peak.peak / kMiB; }

// One layer without recompute, T = s·b = 2048 tokens, 2-byte elements (Korthikanti et al. 2022
// without dropout, flash attention): input norm's input T·h = 4 MiB, QKV's input 4, q k v 3 × 4,
// lse 8·2048·2 B = 1/32 MiB, output projection's input 4, pre-MLP norm's input 4, fc1's input 4,
// GELU's input T·4h = 16 (its output is fc2's input, 16): 64 + 1/32 MiB = 32·s·b·h bytes + lse.
constexpr double kLayer = 64 + 1.0 / 32;

TEST(MegatronRecompute, NoRecomputeKeepsMegatronsSavedTensors) { EXPECT_DOUBLE_EQ(cache_mib(""), 4 * kLayer); }

// The peer counts GELU three times (input, output and a copy): 2 × 16 MiB more per layer.
TEST(MegatronRecompute, PeerCountsGeluThreeTimes) {
  EXPECT_DOUBLE_EQ(cache_mib("", Mode::SimuMax12), 4 * (kLayer + 32));
}

// full + uniform, 1 layer per unit: every layer keeps only its input, T·h·2 B = 4 MiB.
TEST(MegatronRecompute, FullUniformKeepsEachLayersInput) {
  EXPECT_DOUBLE_EQ(cache_mib(R"("recompute_granularity": "full", "recompute_method": "uniform",
                                 "recompute_num_layers": 1)"),
                   4 * 4.0);
}

// full + uniform, 2 layers per unit: the 4-layer chunk keeps two unit inputs, 2 × 4 MiB. In
// backward a unit is recomputed whole, so two layers' activations are live at once: at the last
// layer's backward, unit 1 layer holds 3 other inputs (12 MiB) + one layer (64 + 1/32), units of 2
// hold the other unit's input (4 MiB) + two layers, a peak higher by 64 + 1/32 − 8 MiB.
TEST(MegatronRecompute, FullUniformUnitsKeepOneInputPerUnit) {
  const std::string two = R"("recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 2)";
  const std::string one = R"("recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1)";
  EXPECT_DOUBLE_EQ(cache_mib(two), 2 * 4.0);
  EXPECT_DOUBLE_EQ(peak_mib(two) - peak_mib(one), kLayer - 8);
  // A unit longer than the chunk keeps one input for the whole chunk.
  EXPECT_DOUBLE_EQ(cache_mib(R"("recompute_granularity": "full", "recompute_method": "uniform",
                                 "recompute_num_layers": 8)"),
                   4.0);
}

// full + block 3: the first 3 layers of the chunk keep their input, the last keeps everything.
TEST(MegatronRecompute, FullBlockRecomputesTheFirstLayersOfEachChunk) {
  EXPECT_DOUBLE_EQ(cache_mib(R"("recompute_granularity": "full", "recompute_method": "block",
                                 "recompute_num_layers": 3)"),
                   3 * 4.0 + kLayer);
  // The same as the peer's spelling.
  EXPECT_DOUBLE_EQ(cache_mib(R"("recompute_granularity": "full_block", "recompute_layer_num": 3)"), 3 * 4.0 + kLayer);
}

// selective core_attn (Megatron's default module): q, k, v stay as the checkpoint's input; the
// softmax statistics (lse, 1/32 MiB) go. With flash attention that is all core_attn saves.
TEST(MegatronRecompute, SelectiveCoreAttnDropsTheAttentionInternals) {
  EXPECT_DOUBLE_EQ(cache_mib(R"("recompute_granularity": "selective")"), 4 * 64.0);
  EXPECT_DOUBLE_EQ(cache_mib(R"("recompute_granularity": "selective", "recompute_modules": ["core_attn"])"), 4 * 64.0);
}

// Unfused attention saves the scores, 8 heads × 2048² × 2 B = 64 MiB per layer, which core_attn
// recompute removes (Korthikanti's selective recompute).
TEST(MegatronRecompute, SelectiveCoreAttnRemovesTheScores) {
  const std::string math = R"("use_flash_sdp": false, "use_math_sdp": true)";
  EXPECT_DOUBLE_EQ(cache_mib(math), 4 * (kLayer - 1.0 / 32 + 64));
  EXPECT_DOUBLE_EQ(cache_mib(math + R"(, "recompute_granularity": "selective")"), 4 * 64.0);
}

// core_attn + mlp: the whole MLP is one checkpoint whose input is the pre-MLP norm's output
// (4 MiB); fc1's input, GELU's input and fc2's input (4 + 16 + 16 MiB) are recomputed, lse too:
// 64 − 36 + 4 = 32 MiB per layer.
TEST(MegatronRecompute, SelectiveMlpCheckpointsTheWholeMlp) {
  EXPECT_DOUBLE_EQ(cache_mib(R"("recompute_granularity": "selective", "recompute_modules": ["core_attn", "mlp"])"),
                   4 * 32.0);
}

TEST(MegatronRecompute, KeysThatChangeNothingAreErrors) {
  EXPECT_EQ(error_of([] { (void)strategy(R"("recompute_granularity": "full", "recompute_num_layers": 1)"); }),
            "s.json: /recompute_method: required with recompute_granularity 'full' (Megatron); valid values: "
            "uniform, block");
  EXPECT_EQ(error_of([] { (void)strategy(R"("recompute_granularity": "full", "recompute_method": "block")"); }),
            "s.json: /recompute_num_layers: required with recompute_granularity 'full' (Megatron)");
  EXPECT_EQ(error_of([] {
              (void)strategy(R"("recompute_granularity": "selective", "recompute_num_layers": 2)");
            }),
            "s.json: /recompute_num_layers: only applies to recompute_granularity 'full'; selective recompute "
            "covers every layer");
  EXPECT_EQ(error_of([] { (void)strategy(R"("recompute_method": "block")"); }),
            "s.json: /recompute_method: needs recompute_granularity 'full' or 'selective' (Megatron); the peer's "
            "granularities take recompute_layer_num");
  EXPECT_EQ(error_of([] {
              (void)strategy(R"("recompute_granularity": "selective", "recompute_modules": ["core_atn"])");
            }),
            "s.json: /recompute_modules/0: unknown module 'core_atn'; valid values: core_attn, mlp, moe, moe_act, "
            "shared_experts, routed_experts, layernorm, mla_up_proj, a2a_overlap_attn, a2a_overlap_post_attn, "
            "a2a_overlap_mlp; did you mean 'core_attn'?");
  EXPECT_EQ(error_of([] {
              (void)strategy(R"("recompute_granularity": "full", "recompute_method": "block",
                                "recompute_num_layers": 2, "recompute_layer_num": 2)");
            }),
            "s.json: /recompute_layer_num: is the peer's key; with recompute_granularity 'full' use "
            "recompute_num_layers (full) or leave it out (selective)");
}

TEST(MegatronRecompute, NotPartOfSimuMaxInCompatMode) {
  const ModelConfig m = gpt_small();
  const StrategyConfig s = strategy(R"("recompute_granularity": "selective")");
  const auto issues = validate_plan(m, s, test::preset_system("h100-sxm-80g"), PlanSources{}, Mode::SimuMax12);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].path, "/recompute_granularity");
  EXPECT_EQ(issues[0].message,
            "Megatron's recompute keys are not part of SimuMax v1.2; use recompute_granularity full_block, "
            "attn_only, mlp_only, sdp_only or selective_recompute with recompute_layer_num, or the default mode");
}

}  // namespace
}  // namespace trainsim
