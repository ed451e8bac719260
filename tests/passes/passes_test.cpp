// Passes over a layer's leaves: fp8 quantizer insertion and recompute roles.
#include <gtest/gtest.h>

#include "inputs/strategy_config.h"
#include "passes/fp8.h"
#include "passes/recompute.h"

namespace trainsim {
namespace {

Leaf leaf(const char* name, OpClass op = OpClass::Default, double input_bytes = 0) {
  Leaf l;
  l.name = name;
  Kernel k;
  k.op = op;
  l.kernels[kFwd] = {k};
  l.input_bytes = input_bytes;
  return l;
}

std::vector<std::string> names(const std::vector<Leaf>& L) {
  std::vector<std::string> out;
  for (const auto& l : L) out.emplace_back(l.name);
  return out;
}

// A quantizer reads the bf16 input (1000 B) and writes the fp8 copy (500 B).
TEST(Fp8PassTest, QuantizerBeforeEachFp8Gemm) {
  std::vector<Leaf> L = {leaf("input_layernorm"), leaf("linear_qkv", OpClass::Fp8Matmul, 1000),
                         leaf("core_attention", OpClass::SdpFwd), leaf("experts.linear_fc1", OpClass::Fp8GroupMatmul, 200)};
  insert_quantizers(L, Fp8Recipe::Delayed);
  EXPECT_EQ(names(L), (std::vector<std::string>{"input_layernorm", "linear_qkv.quantizer", "linear_qkv",
                                                "core_attention", "experts.linear_fc1.quantizer",
                                                "experts.linear_fc1"}));
  EXPECT_DOUBLE_EQ(L[1].kernels[kFwd][0].bytes, 1500);
  EXPECT_DOUBLE_EQ(L[1].fpk, 1500);
  EXPECT_DOUBLE_EQ(L[4].kernels[kFwd][0].bytes, 300);
}

StrategyConfig strategy(const std::string& extra) {
  return load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 4, )" + extra + "}", "s.json");
}

std::vector<Leaf> dense_layer() {
  return {leaf("input_layernorm"), leaf("linear_qkv"),        leaf("rotary_emb"), leaf("core_attention"),
          leaf("linear_proj"),     leaf("pre_mlp_layernorm"), leaf("linear_fc1"), leaf("swiglu"),
          leaf("linear_fc2")};
}

TEST(RecomputePassTest, FullBlockRecomputesEveryLeafAsOneSegment) {
  const StrategyConfig s = strategy(R"("recompute_granularity": "full_block", "recompute_layer_num": 1)");
  ModelConfig m;
  std::vector<Leaf> L = dense_layer();
  apply_recompute(L, m, s, false, Mode::Default);
  for (const auto& l : L) EXPECT_TRUE(l.recompute) << l.name;
  EXPECT_EQ(L.front().status, RecomputeStatus::First);
  EXPECT_EQ(L[4].status, RecomputeStatus::Middle);
  EXPECT_EQ(L.back().status, RecomputeStatus::Last);
  EXPECT_FALSE(L.back().variance);  // full_block keeps no variance tail
}

// Selective attention recompute without the norm: QKV, rope and attention re-run; the output
// projection and the MLP keep their activations.
TEST(RecomputePassTest, SelectiveAttentionOnly) {
  const StrategyConfig s =
      strategy(R"("recompute_granularity": "selective_recompute", "attn_recompute": true, "recompute_layer_num": 1)");
  ModelConfig m;
  std::vector<Leaf> L = dense_layer();
  apply_recompute(L, m, s, false, Mode::Default);
  std::vector<std::string> rc;
  for (const auto& l : L)
    if (l.recompute) rc.emplace_back(l.name);
  EXPECT_EQ(rc, (std::vector<std::string>{"linear_qkv", "rotary_emb", "core_attention"}));
  EXPECT_EQ(L[1].status, RecomputeStatus::First);
  EXPECT_EQ(L[3].status, RecomputeStatus::Last);
}

// Megatron's layernorm module: both norms re-run and their consumers (QKV, fc1) become the
// segment tails that keep no input copy.
TEST(RecomputePassTest, MegatronLayernormModuleDiscardsNormOutputs) {
  const StrategyConfig s =
      strategy(R"("megatron_recompute": true, "megatron_recompute_modules": ["layernorm"], "recompute_layer_num": 1)");
  ModelConfig m;
  std::vector<Leaf> L = dense_layer();
  apply_recompute(L, m, s, false, Mode::Default);
  EXPECT_TRUE(L[0].recompute);
  EXPECT_TRUE(L[1].variance && L[1].has_cached_inputs && L[1].breakpoint);
  EXPECT_TRUE(L[5].recompute);
  EXPECT_TRUE(L[6].variance && L[6].has_cached_inputs);
  EXPECT_FALSE(L[3].recompute);
}

}  // namespace
}  // namespace trainsim
