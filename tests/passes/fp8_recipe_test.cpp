// fp8 recipes (fp8_recipe, fp8_param_gather): the weight bytes Megatron with TransformerEngine
// keeps per Linear parameter, the bytes a fp8 Linear saves of its input and its cast writes,
// hand-computed on a small GPT layer: h 1024, 8 heads of 128, GELU MLP
// of 4096, no Linear biases. Its Linear weights hold 3 + 1 + 4 + 4 = 12 Mi parameters (qkv
// 1024×3072, proj 1024×1024, fc1 1024×4096, fc2 4096×1024); four layers 48 Mi. In bf16 each takes
// 2 bytes, so a recipe adds 48 Mi × (bytes − 2) to the chunk's weights.
#include <gtest/gtest.h>

#include <algorithm>

#include "inputs/strategy_config.h"
#include "test_estimate.h"
#include "comm/collective.h"
#include "plan/validate.h"
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
  EXPECT_DOUBLE_EQ(fp8_weight_bytes(Fp8Recipe::Delayed, false, false), 4);
  EXPECT_DOUBLE_EQ(fp8_weight_bytes(Fp8Recipe::Tensorwise, false, false), 4);
  EXPECT_DOUBLE_EQ(fp8_weight_bytes(Fp8Recipe::Delayed, false, true), 3);
  EXPECT_DOUBLE_EQ(fp8_weight_bytes(Fp8Recipe::Blockwise, false, false), 4 + 8.0 / 16384);
  EXPECT_DOUBLE_EQ(fp8_weight_bytes(Fp8Recipe::Mxfp8, false, true), 4.0625);
  EXPECT_DOUBLE_EQ(fp8_weight_bytes(Fp8Recipe::Delayed, true, false), 2);
  EXPECT_DOUBLE_EQ(fp8_weight_bytes(Fp8Recipe::Mxfp8, true, true), 2.0625);
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
  EXPECT_TRUE(is_blackwell_system("NVIDIA-BlackWell"));
  EXPECT_TRUE(is_blackwell_system("b300"));
  EXPECT_FALSE(is_blackwell_system("b20"));
  EXPECT_FALSE(is_blackwell_system(""));
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

// Per input element (passes/fp8.cpp): the forward saves one 1-byte copy (TE drops the row-wise
// data after the forward GEMM) plus its scales: blockwise one fp32 per 1×128 → 4/128, mxfp8 one
// E8M0 byte per 32 → 1/32. The cast writes one copy for the per-tensor recipes (two with the
// transpose on Hopper), both orientations with scales for blockwise and mxfp8: 2 × (1 + 1/32).
TEST(Fp8Recipe, SavedInputAndCastBytesPerElement) {
  EXPECT_DOUBLE_EQ(fp8_saved_input_bytes(Fp8Recipe::Delayed), 1);
  EXPECT_DOUBLE_EQ(fp8_saved_input_bytes(Fp8Recipe::Tensorwise), 1);
  EXPECT_DOUBLE_EQ(fp8_saved_input_bytes(Fp8Recipe::Blockwise), 1.03125);
  EXPECT_DOUBLE_EQ(fp8_saved_input_bytes(Fp8Recipe::Mxfp8), 1.03125);
  EXPECT_DOUBLE_EQ(fp8_cast_write_bytes(Fp8Recipe::Delayed, false), 1);
  EXPECT_DOUBLE_EQ(fp8_cast_write_bytes(Fp8Recipe::Delayed, true), 2);
  EXPECT_DOUBLE_EQ(fp8_cast_write_bytes(Fp8Recipe::Tensorwise, true), 2);
  EXPECT_DOUBLE_EQ(fp8_cast_write_bytes(Fp8Recipe::Blockwise, false), 2.0625);
  EXPECT_DOUBLE_EQ(fp8_cast_write_bytes(Fp8Recipe::Mxfp8, true), 2.0625);
}

// The leaves of one layer of the 4-layer chunk (no embedding, no head).
std::vector<Leaf> layer_leaves(const StrategyConfig& s, bool blackwell, Mode mode = Mode::Default) {
  const ModelConfig m = gpt_small();
  const Plan plan = resolve_plan(m, s, test::preset_system(blackwell ? "b200-sxm-180g" : "h100-sxm-80g"), mode);
  ChunkSpec spec = plan.chunks[0][0];
  spec.embedding = spec.head = false;
  const ChunkEnv env{.mode = mode, .blackwell = blackwell};
  return build_chunk(m, s, plan.padded_vocab, spec, env).templates.at(0)->leaves;
}
std::vector<Leaf> layer_leaves(const std::string& extra, bool blackwell, Mode mode = Mode::Default) {
  return layer_leaves(strategy(extra), blackwell, mode);
}
const Leaf& leaf_named(const std::vector<Leaf>& L, const std::string& name) {
  const auto it = std::find_if(L.begin(), L.end(), [&](const Leaf& l) { return l.name == name; });
  EXPECT_NE(it, L.end()) << name;
  return *it;
}
double layer_cache_mib(const std::string& extra, bool blackwell, Mode mode = Mode::Default) {
  double bytes = 0;
  for (const auto& l : layer_leaves(extra, blackwell, mode)) bytes += l.cache;
  return bytes / kMiB;
}

// One layer, T = 2048 tokens, tp 1, flash attention. bf16 (docs/memory.md recompute table):
// input norm's input 4 MiB, QKV's input 4, q k v 12, lse 1/32, projection's input 4, pre-MLP
// norm's input 4, fc1's input 4, GELU's input 16, fc2's input 16: 64 + 1/32 MiB.
// Under fp8 the four Linear inputs are saved as one 1-byte copy: QKV 2048·1024 = 2 Mi elements,
// projection 2 Mi, fc1 2 Mi, fc2 2048·4096 = 8 Mi; 14 Mi elements, 14 MiB instead of 28; and flash
// attention keeps its bf16 output o (4 MiB), which the projection no longer saves in bf16:
// delayed, tensorwise 64 + 1/32 − 28 + 14 + 4 = 54 + 1/32 MiB. Blockwise and mxfp8 add the scales
// of the saved copies, 14 Mi / 32 bytes = 14/32 MiB: 54 + 15/32 MiB. The compat mode keeps
// SimuMax's 1 byte whatever the recipe.
TEST(Fp8Recipe, OneLayerSavesOneFp8CopyOfEachLinearInputPlusItsScales) {
  EXPECT_DOUBLE_EQ(layer_cache_mib("", false), 64 + 1.0 / 32);
  EXPECT_DOUBLE_EQ(layer_cache_mib(R"("fp8": true)", false), 54 + 1.0 / 32);
  EXPECT_DOUBLE_EQ(layer_cache_mib(R"("fp8": true, "fp8_recipe": "tensorwise")", false), 54 + 1.0 / 32);
  EXPECT_DOUBLE_EQ(layer_cache_mib(R"("fp8": true)", true), 54 + 1.0 / 32);
  EXPECT_DOUBLE_EQ(layer_cache_mib(R"("fp8": true, "fp8_recipe": "blockwise")", false), 54 + 15.0 / 32);
  EXPECT_DOUBLE_EQ(layer_cache_mib(R"("fp8": true, "fp8_recipe": "mxfp8")", true), 54 + 15.0 / 32);
  const auto L = layer_leaves(R"("fp8": true, "fp8_recipe": "mxfp8")", true);
  EXPECT_DOUBLE_EQ(leaf_named(L, "linear_qkv").cache / kMiB, 2 * 1.03125);
  EXPECT_DOUBLE_EQ(leaf_named(L, "linear_fc2").cache / kMiB, 8 * 1.03125);
}

// tp 2 with sequence parallelism, blockwise: the column-parallel QKV saves its local column-wise
// shard, T/2 · h = 1 Mi elements (TE all-gathers it again for the wgrad GEMM): 1.03125 MiB; the
// row-parallel fc2 its input T · 4h/2 = 4 Mi elements: 4.125 MiB. Delayed saves the row-wise shard
// of QKV's input instead: 1 MiB.
TEST(Fp8Recipe, SequenceParallelSavesTheLocalShardWithItsScales) {
  auto tp2 = [](const char* recipe) {
    return load_strategy(std::string(R"({"seq_len": 2048, "micro_batch_size": 1, "micro_batch_num": 1,
        "world_size": 2, "tp_size": 2, "enable_sequence_parallel": true, "fp8": true, "fp8_recipe": ")") +
                             recipe + R"("})",
                         "s.json");
  };
  const auto L = layer_leaves(tp2("blockwise"), false);
  EXPECT_DOUBLE_EQ(leaf_named(L, "linear_qkv").cache / kMiB, 1.03125);
  EXPECT_DOUBLE_EQ(leaf_named(L, "linear_fc2").cache / kMiB, 4.125);
  EXPECT_DOUBLE_EQ(leaf_named(layer_leaves(tp2("delayed"), false), "linear_qkv").cache / kMiB, 1);
}

// The cast before each fp8 GEMM reads the bf16 input and writes per element: delayed and
// tensorwise one byte, two on Hopper where the cast also writes the transpose (no sequence-parallel
// fp8 gather); blockwise and mxfp8 2 × (1 + 1/32). tp 1: the projection's input, 2 Mi elements,
// 4 MiB read; delayed on B200 4 + 2 = 6 MiB. QKV's input (2 Mi elements) is its fused norm's
// output: delayed on H100 the norm writes fp8 and only the transpose runs, 2 + 2 = 4 MiB;
// blockwise is cast after the norm, 4 + 4.125 = 8.125. fc2's, 8 Mi: tensorwise on H100
// 16 + 16 + 16 = 48 MiB (current scaling reads the input twice: its amax pass, then the cast),
// mxfp8 on B200 16 + 16.5 = 32.5.
// tp 2 with SP, delayed on H100: QKV all-gathers its fp8 row-wise shard (T/2 · h = 1 Mi
// elements), which the norm writes: no cast kernel, the norm's forward 1 Mi · (2 + 1) bytes +
// 2 KiB of weight. fc2 (row-parallel, T · 4h/2 = 4 Mi elements) writes the transpose under TE
// 2.x, 8 + 8 = 16 MiB, not under TE 1.x (any SP Linear; also when no te_version is given),
// 8 + 4 = 12. The compat mode's cast writes one copy: QKV 6 MiB on H100.
TEST(Fp8Recipe, CastKernelBytesPerRecipe) {
  auto cast_mib = [](const StrategyConfig& s, bool blackwell, const char* leaf, Mode mode = Mode::Default) {
    const auto leaves = layer_leaves(s, blackwell, mode);
    const auto& k = leaf_named(leaves, leaf).kernels[kFwd];
    return k.size() == 1 ? k[0].bytes / kMiB : -1.0;  // one cast kernel, else no match
  };
  EXPECT_DOUBLE_EQ(cast_mib(strategy(R"("fp8": true)"), false, "linear_qkv.quantizer"), 4);
  EXPECT_DOUBLE_EQ(cast_mib(strategy(R"("fp8": true)"), true, "linear_proj.quantizer"), 6);
  EXPECT_DOUBLE_EQ(cast_mib(strategy(R"("fp8": true, "fp8_recipe": "tensorwise")"), false, "linear_fc2.quantizer"), 48);
  EXPECT_DOUBLE_EQ(cast_mib(strategy(R"("fp8": true, "fp8_recipe": "blockwise")"), false, "linear_qkv.quantizer"), 8.125);
  EXPECT_DOUBLE_EQ(cast_mib(strategy(R"("fp8": true, "fp8_recipe": "mxfp8")"), true, "linear_fc2.quantizer"), 32.5);
  EXPECT_DOUBLE_EQ(cast_mib(strategy(R"("fp8": true)"), false, "linear_qkv.quantizer", Mode::SimuMax12), 6);
  auto tp2 = [](const char* te) {
    return load_strategy(std::string(R"({"seq_len": 2048, "micro_batch_size": 1, "micro_batch_num": 1,
        "world_size": 2, "tp_size": 2, "enable_sequence_parallel": true, "fp8": true)") + te + "}",
                         "s.json");
  };
  const auto sp = layer_leaves(tp2(R"(, "te_version": "2.8.0")"), false);
  EXPECT_TRUE(leaf_named(sp, "linear_qkv.quantizer").kernels[kFwd].empty());
  EXPECT_DOUBLE_EQ(leaf_named(sp, "input_layernorm").kernels[kFwd][0].bytes, 3 * kMiB + 2048);
  EXPECT_DOUBLE_EQ(cast_mib(tp2(R"(, "te_version": "2.8.0")"), false, "linear_fc2.quantizer"), 16);
  EXPECT_DOUBLE_EQ(cast_mib(tp2(R"(, "te_version": "1.9.0")"), false, "linear_fc2.quantizer"), 12);
  EXPECT_DOUBLE_EQ(cast_mib(tp2(""), false, "linear_fc2.quantizer"), 12);
}

// tp 2 with sequence parallelism: TE all-gathers the quantized tensors. QKV's input, T · h =
// 2 Mi elements gathered, forward and again for the wgrad GEMM: delayed 1 byte each, 2 MiB (bf16
// 4 MiB); mxfp8 (B200) one usage with its E8M0 scales, 2.0625 MiB. fc2's output gradient,
// T · h = 2 Mi elements: delayed its row-wise fp8 data, 2 MiB; mxfp8 both usages, 4.125 MiB. The
// input gradients are reduce-scattered in bf16 (4 MiB); the compat mode gathers bf16.
TEST(Fp8Recipe, SequenceParallelGathersMoveTheQuantizedTensors) {
  auto tp2 = [](const char* recipe) {
    return load_strategy(std::string(R"({"seq_len": 2048, "micro_batch_size": 1, "micro_batch_num": 1,
        "world_size": 2, "tp_size": 2, "enable_sequence_parallel": true, "fp8": true, "fp8_recipe": ")") +
                             recipe + R"("})",
                         "s.json");
  };
  auto mib = [](const Leaf& l, int phase) { return l.comms[phase].empty() ? -1.0 : l.comms[phase][0].bytes / kMiB; };
  auto L = layer_leaves(tp2("delayed"), false);
  EXPECT_DOUBLE_EQ(mib(leaf_named(L, "linear_qkv"), kFwd), 2);
  EXPECT_DOUBLE_EQ(mib(leaf_named(L, "linear_qkv"), kBwdW), 2);
  EXPECT_DOUBLE_EQ(mib(leaf_named(L, "linear_qkv"), kBwdAct), 4);
  EXPECT_DOUBLE_EQ(mib(leaf_named(L, "linear_fc2"), kBwdAct), 2);
  L = layer_leaves(tp2("mxfp8"), true);
  EXPECT_DOUBLE_EQ(mib(leaf_named(L, "linear_qkv"), kFwd), 2.0625);
  EXPECT_DOUBLE_EQ(mib(leaf_named(L, "linear_fc2"), kBwdAct), 4.125);
  L = layer_leaves(tp2("delayed"), false, Mode::SimuMax12);
  EXPECT_DOUBLE_EQ(mib(leaf_named(L, "linear_qkv"), kFwd), 4);
  EXPECT_DOUBLE_EQ(mib(leaf_named(L, "linear_fc2"), kBwdAct), 4);
}

// The Linears whose input a fused norm writes (Leaf::fp8_norm_fused; Megatron's TE layer spec,
// TELayerNormColumnParallelLinear): a GQA/MHA layer's QKV and a dense layer's fc1; MLA's up
// projections (with their latent norms), not its down projections (the input norm is a TENorm
// feeding both); in a MoE layer not the shared expert's fc1 (the pre-MLP norm is a TENorm).
TEST(Fp8Recipe, TheLinearsMegatronFusesWithTheirNorm) {
  auto fused = [](const std::vector<Leaf>& L) {
    std::vector<std::string> out;
    for (const auto& l : L)
      if (l.fp8_norm_fused) out.emplace_back(l.name);
    return out;
  };
  using Names = std::vector<std::string>;
  EXPECT_EQ(fused(layer_leaves(R"("fp8": true)", false)), (Names{"linear_qkv", "linear_fc1"}));
  const ModelConfig m = load_model(R"({"model_type": "moe", "model_name": "mla_small", "attention_type": "mla",
      "hidden_size": 1024, "head_num": 8, "kv_head_num": 8, "head_size": 128, "intermediate_size": 2048,
      "moe_ffn_hidden_size": 512, "moe_shared_expert_intermediate_size": 512, "layer_num": 2, "dense_layers": 1,
      "expert_num": 8, "topk": 2, "v_head_dim": 128, "qk_head_dim": 128, "qk_pos_emb_head_dim": 64,
      "q_lora_rank": 256, "kv_lora_rank": 128, "vocab_size": 1024, "use_swiglu": true})",
                                   "mla_small.json");
  const StrategyConfig s = strategy(R"("fp8": true)");
  const Plan plan = resolve_plan(m, s, test::preset_system("h100-sxm-80g"), Mode::Default);
  ChunkSpec spec = plan.chunks[0][0];
  spec.embedding = spec.head = false;
  const Chunk chunk = build_chunk(m, s, plan.padded_vocab, spec, ChunkEnv{.mode = Mode::Default});
  ASSERT_EQ(chunk.templates.size(), 2u);
  for (const auto& t : chunk.templates) {
    if (t->moe) {
      EXPECT_EQ(fused(t->leaves), (Names{"q_up_proj", "kv_up_proj"}));
    } else {
      EXPECT_EQ(fused(t->leaves), (Names{"q_up_proj", "kv_up_proj", "linear_fc1"}));
    }
  }
}

// In a plan: the 4-layer model on pp 2 (2 layers a stage), 4 micro-batches. Blockwise against
// delayed on H100 and mxfp8 against delayed on B200 raise the saved activations of one
// micro-batch on the first stage by 2 layers × 14/32 MiB = 7/8 MiB. The mxfp8 stage's liveness
// peak is the cast of the second layer's fc2 input, which writes both orientations: everything
// saved before it, 2 × (54 + 15/32) − fc2's own 8 × 1.03125 = 100.6875 MiB, plus the cast's
// 16 MiB read and 16.5 MiB written: 133.1875 MiB.
TEST(Fp8Recipe, BlockScaledRecipesRaiseSavedActivationsByTheScales) {
  const ModelConfig m = gpt_small();
  auto first_stage = [&](const std::string& recipe, const char* sys) {
    const StrategyConfig s = load_strategy(R"({"seq_len": 2048, "micro_batch_size": 1, "micro_batch_num": 4,
        "world_size": 2, "pp_size": 2, "fp8": true, "fp8_recipe": ")" + recipe + R"("})",
                                           "s.json");
    return estimate(m, s, test::preset_system(sys)).stages.at(0);
  };
  auto saved_mib = [](const StageMemory& a, const StageMemory& b) {
    return (a.activation_cache_per_mb_bytes - b.activation_cache_per_mb_bytes) / kMiB;
  };
  const char* h100 = "h100-sxm-80g";
  const char* b200 = "b200-sxm-180g";
  EXPECT_DOUBLE_EQ(saved_mib(first_stage("blockwise", h100), first_stage("delayed", h100)), 7.0 / 8);
  const StageMemory mxfp8 = first_stage("mxfp8", b200);
  EXPECT_DOUBLE_EQ(saved_mib(mxfp8, first_stage("delayed", b200)), 7.0 / 8);
  EXPECT_EQ(mxfp8.peak_phase, "forward at linear_fc2.quantizer");
  EXPECT_DOUBLE_EQ(mxfp8.peak_activation_bytes / kMiB, 133.1875);
}

}  // namespace
}  // namespace trainsim
