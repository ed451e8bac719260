// The fp8 quantize work TransformerEngine 2.8 runs around a Linear (passes/fp8.cpp), by hand on
// one small Linear: 4096 tokens, k 1024, n 2048 (its bf16 input 4 Mi elements, 8 MiB; its output
// 8 Mi elements), after an RMSNorm over the same 4096 × 1024 (kernel: input 8 MiB + weight
// 2 KiB + output 8 MiB).
#include <gtest/gtest.h>

#include "calibration/shape_key.h"
#include "passes/fp8.h"

namespace trainsim {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

Leaf norm_leaf() {
  Leaf l;
  l.name = "input_layernorm";
  Kernel k;
  k.bytes = 16 * kMiB + 2048;
  l.kernels[kFwd] = {k};
  l.input_bytes = 8 * kMiB;
  return l;
}

// A fp8 Linear of `m` rows, k, n, whose bf16 input on this rank is `in_bytes`.
Leaf gemm_leaf(double m, double k, double n, double in_bytes, bool fused, bool transpose) {
  Leaf l;
  l.name = "linear_qkv";
  Kernel g;
  g.op = OpClass::Fp8Matmul;
  g.flops = 2 * m * k * n;
  g.key = matmul_key(1, m, k, n, KeyLayout::TN, false, KeyDtype::bf16);
  l.kernels[kFwd] = {g};
  l.input_bytes = in_bytes;
  l.fp8_norm_fused = fused;
  l.fp8_cast_transpose = transpose;
  return l;
}

struct Layer {
  std::vector<Leaf> L;
  const Leaf& norm() const { return L[0]; }
  const Leaf& quantizer() const { return L[1]; }
};

Layer run(Fp8Recipe recipe, bool blackwell, bool fused) {
  Layer r{{norm_leaf(), gemm_leaf(4096, 1024, 2048, 8 * kMiB, fused, !blackwell)}};
  insert_quantizers(r.L, recipe, true, blackwell);
  EXPECT_EQ(r.L.size(), 3u);
  EXPECT_EQ(r.L[1].name, "linear_qkv.quantizer");
  return r;
}

// LayerNormLinear (the norm fused in, TE's normalization.cpp rmsnorm_fwd):
// - delayed on Hopper: the norm kernel writes fp8, 16 MiB + 2 KiB − 4 Mi · 1 = 12 MiB + 2 KiB;
//   no cast; the transpose the wgrad GEMM needs reads and writes 4 Mi bytes: 8 MiB, 1 launch.
//   The output gradient's quantize is unchanged: 16 MiB read + 8 Mi · 2 written = 32 MiB.
// - delayed on Blackwell: the norm as on Hopper, no forward kernel at all; the gradient's
//   quantize 16 + 8 = 24 MiB.
// - tensorwise on Hopper: the norm writes bf16 and its amax (unchanged, 16 MiB + 2 KiB), then
//   scale and cast: 8 MiB read + 4 Mi · 2 written = 16 MiB in 2 launches (not 24 MiB in 3).
// - mxfp8 on Blackwell: unfused, norm unchanged, cast 8 + 4 Mi · 2 · (1 + 1/32) = 16.25 MiB.
// - A Linear whose input no norm writes (delayed on Hopper): the cast, 8 + 8 = 16 MiB.
TEST(Fp8TeFusion, NormOfALayerNormLinearWritesOrScalesTheFp8Input) {
  Layer r = run(Fp8Recipe::Delayed, false, true);
  EXPECT_DOUBLE_EQ(r.norm().kernels[kFwd][0].bytes, 12 * kMiB + 2048);
  ASSERT_EQ(r.quantizer().kernels[kFwd].size(), 1u);
  EXPECT_DOUBLE_EQ(r.quantizer().kernels[kFwd][0].bytes, 8 * kMiB);
  EXPECT_EQ(r.quantizer().kernels[kFwd][0].launches, 1u);
  ASSERT_EQ(r.quantizer().kernels[kBwdAct].size(), 1u);
  EXPECT_DOUBLE_EQ(r.quantizer().kernels[kBwdAct][0].bytes, 32 * kMiB);
  EXPECT_TRUE(r.quantizer().kernels[kBwdW].empty());

  r = run(Fp8Recipe::Delayed, true, true);
  EXPECT_DOUBLE_EQ(r.norm().kernels[kFwd][0].bytes, 12 * kMiB + 2048);
  EXPECT_TRUE(r.quantizer().kernels[kFwd].empty());
  EXPECT_DOUBLE_EQ(r.quantizer().kernels[kBwdAct][0].bytes, 24 * kMiB);

  r = run(Fp8Recipe::Tensorwise, false, true);
  EXPECT_DOUBLE_EQ(r.norm().kernels[kFwd][0].bytes, 16 * kMiB + 2048);
  EXPECT_DOUBLE_EQ(r.quantizer().kernels[kFwd][0].bytes, 16 * kMiB);
  EXPECT_EQ(r.quantizer().kernels[kFwd][0].launches, 2u);

  r = run(Fp8Recipe::Mxfp8, true, true);
  EXPECT_DOUBLE_EQ(r.norm().kernels[kFwd][0].bytes, 16 * kMiB + 2048);
  EXPECT_DOUBLE_EQ(r.quantizer().kernels[kFwd][0].bytes, 16.25 * kMiB);
  EXPECT_EQ(r.quantizer().kernels[kFwd][0].launches, 1u);

  r = run(Fp8Recipe::Delayed, false, false);
  EXPECT_DOUBLE_EQ(r.norm().kernels[kFwd][0].bytes, 16 * kMiB + 2048);
  EXPECT_DOUBLE_EQ(r.quantizer().kernels[kFwd][0].bytes, 16 * kMiB);
}

// Sequence parallelism over tp 4.
// Row-parallel (the output gradient all-gathered): 4096 rows after the gather, k 1024, n 2048,
// 8 Mi gradient elements, 2 Mi local. TE quantizes the local shard, then gathers:
// - delayed on Hopper: 2 Mi · (2 + 1 row-wise) = 6 MiB, 1 launch, then the transpose of the
//   gathered 8 Mi: 16 MiB;
// - tensorwise on Hopper: 2 Mi · (2 · 2 + 1) = 10 MiB in 3 launches, then 16 MiB;
// - delayed on Blackwell: 6 MiB only; mxfp8: both orientations, 2 Mi · (2 + 2.0625) = 8.125 MiB.
// Column-parallel (the input all-gathered, its cast writes no transpose): the wgrad GEMM's
// input, 4096 · 1024 = 4 Mi elements after the re-gather, is transposed on Hopper: 8 MiB,
// delayed and blockwise; nothing on Blackwell.
TEST(Fp8TeFusion, SequenceParallelGathersQuantizeTheShardAndTransposeAfter) {
  auto row = [](Fp8Recipe recipe, bool blackwell) {
    Leaf g = gemm_leaf(4096, 1024, 2048, 8 * kMiB, false, !blackwell);
    g.comms[kBwdAct].push_back({Collective::AllGather, Group::TP, 32 * kMiB, 4, "tp"});
    std::vector<Leaf> L = {g};
    insert_quantizers(L, recipe, true, blackwell);
    return L[0].kernels[kBwdAct];
  };
  KernelList k = row(Fp8Recipe::Delayed, false);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_DOUBLE_EQ(k[0].bytes, 6 * kMiB);
  EXPECT_EQ(k[0].launches, 1u);
  EXPECT_DOUBLE_EQ(k[1].bytes, 16 * kMiB);
  EXPECT_EQ(k[1].launches, 1u);
  k = row(Fp8Recipe::Tensorwise, false);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_DOUBLE_EQ(k[0].bytes, 10 * kMiB);
  EXPECT_EQ(k[0].launches, 3u);
  EXPECT_DOUBLE_EQ(k[1].bytes, 16 * kMiB);
  k = row(Fp8Recipe::Delayed, true);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_DOUBLE_EQ(k[0].bytes, 6 * kMiB);
  k = row(Fp8Recipe::Mxfp8, true);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_DOUBLE_EQ(k[0].bytes, 8.125 * kMiB);

  auto col = [](Fp8Recipe recipe, bool blackwell) {
    Leaf g = gemm_leaf(4096, 1024, 2048, 2 * kMiB, false, false);
    g.comms[kFwd].push_back({Collective::AllGather, Group::TP, 8 * kMiB, 4, "tp"});
    std::vector<Leaf> L = {g};
    insert_quantizers(L, recipe, true, blackwell);
    return L[0].kernels[kBwdW];
  };
  k = col(Fp8Recipe::Delayed, false);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_DOUBLE_EQ(k[0].bytes, 8 * kMiB);
  k = col(Fp8Recipe::Blockwise, false);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_DOUBLE_EQ(k[0].bytes, 8 * kMiB);
  EXPECT_TRUE(col(Fp8Recipe::Delayed, true).empty());
  EXPECT_TRUE(col(Fp8Recipe::Mxfp8, true).empty());
}

// The compat mode keeps the peer's one-pass cast and its norm: the fused flag changes nothing.
TEST(Fp8TeFusion, CompatModeIgnoresTheFusion) {
  std::vector<Leaf> L = {norm_leaf(), gemm_leaf(4096, 1024, 2048, 8 * kMiB, true, false)};
  insert_quantizers(L, Fp8Recipe::Delayed);
  EXPECT_DOUBLE_EQ(L[0].kernels[kFwd][0].bytes, 16 * kMiB + 2048);
  EXPECT_DOUBLE_EQ(L[1].kernels[kFwd][0].bytes, 12 * kMiB);
  EXPECT_TRUE(L[1].kernels[kBwdAct].empty());
}

}  // namespace
}  // namespace trainsim
