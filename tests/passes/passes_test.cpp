// Passes over a layer's leaves: fp8 quantizer insertion and recompute roles.
#include <gtest/gtest.h>

#include "calibration/shape_key.h"
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

// The default mode's quantizer also quantizes the GEMM's output gradient in the backward (TE's
// grad_output_preprocess). By hand: a Linear of 4096 rows, k 1024, n 2048 (input 8 MiB of bf16)
// has 4096 · 2048 = 8 Mi output elements. Delayed on Hopper: forward 8 MiB read + 4 Mi · 1 written
// = 12 MiB (the leaf asks for no transpose; unchanged), backward 16 MiB read + 8 Mi · 2 (copy and
// transpose) = 32 MiB, one launch each. Tensorwise (current scaling) on Blackwell: an amax pass reads the input once more and
// three kernels run (amax, scale, cast): forward 2 · 8 + 4 · 1 = 20 MiB, backward 2 · 16 + 8 = 40
// MiB. A grouped GEMM of 4 experts, 512 rows each, N 768, K 2048: 4 · 512 · 768 = 1,572,864
// output elements; mxfp8 on Blackwell writes 2 · (1 + 1/32) per element: 1,572,864 · 4.0625 =
// 6,389,760 bytes. Without `grad_output` (compat) nothing runs in the backward.
TEST(Fp8PassTest, GradOutputQuantizeInTheBackward) {
  const double mib = 1024.0 * 1024.0;
  auto gemm = [](double in_bytes) {
    Leaf l = leaf("linear_fc1", OpClass::Fp8Matmul, in_bytes);
    Kernel& k = l.kernels[kFwd][0];
    k.flops = 2.0 * 4096 * 1024 * 2048;
    k.key = matmul_key(1, 4096, 1024, 2048, KeyLayout::TN, false, KeyDtype::bf16);
    return l;
  };
  std::vector<Leaf> L = {gemm(8 * mib)};
  insert_quantizers(L, Fp8Recipe::Delayed, true, false);
  ASSERT_EQ(L.size(), 2u);
  EXPECT_DOUBLE_EQ(L[0].kernels[kFwd][0].bytes, 12 * mib);
  EXPECT_EQ(L[0].kernels[kFwd][0].launches, 1u);
  ASSERT_EQ(L[0].kernels[kBwdAct].size(), 1u);
  EXPECT_DOUBLE_EQ(L[0].kernels[kBwdAct][0].bytes, 32 * mib);
  EXPECT_EQ(L[0].kernels[kBwdAct][0].launches, 1u);

  L = {gemm(8 * mib)};
  insert_quantizers(L, Fp8Recipe::Tensorwise, true, true);
  EXPECT_DOUBLE_EQ(L[0].kernels[kFwd][0].bytes, 20 * mib);
  EXPECT_EQ(L[0].kernels[kFwd][0].launches, 3u);
  EXPECT_DOUBLE_EQ(L[0].kernels[kBwdAct][0].bytes, 40 * mib);
  EXPECT_EQ(L[0].kernels[kBwdAct][0].launches, 3u);

  Leaf g = leaf("experts.linear_fc1", OpClass::Fp8GroupMatmul, 2.0 * 4 * 512 * 2048);
  g.kernels[kFwd][0].flops = 2.0 * 4 * 512 * 768 * 2048;
  g.kernels[kFwd][0].key = grouped_key(4, 512, 768, 2048, KeyDtype::bf16, KeyDtype::bf16, KeyDtype::fp32,
                                       KeyStage::fwd, false, false, false, true);
  L = {g};
  insert_quantizers(L, Fp8Recipe::Mxfp8, true, true);
  EXPECT_DOUBLE_EQ(L[0].kernels[kBwdAct][0].bytes, 6389760);

  L = {gemm(8 * mib)};
  insert_quantizers(L, Fp8Recipe::Tensorwise);
  EXPECT_DOUBLE_EQ(L[0].kernels[kFwd][0].bytes, 12 * mib);  // the peer's one pass
  EXPECT_TRUE(L[0].kernels[kBwdAct].empty());
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
