// GEMM key -> cuBLASLt dimensions, FP8 scale pointers, aligned grouped operands.
#include <gtest/gtest.h>

#include "gemm_config.h"

namespace trainsim::kb {
namespace {

TEST(KbGemmConfigTest, Bf16LayoutsFollowTransformerEngine) {
  // fprop Y[b*m, n] = X W^T: cuBLAS m = n (4096), n = b*m (2*2048), transa from 'T'.
  GemmDims f = gemm_dims(2, 2048, 1024, 4096, "TN", false, "bf16", false);
  EXPECT_EQ(f.m, 4096);
  EXPECT_EQ(f.n, 4096);
  EXPECT_EQ(f.k, 1024);
  EXPECT_TRUE(f.ta);
  EXPECT_FALSE(f.tb);
  EXPECT_EQ(f.lda(), 1024);
  EXPECT_EQ(f.ldb(), 1024);
  EXPECT_FALSE(f.a_scale);
  GemmDims w = gemm_dims(1, 4096, 8192, 1024, "NT", true, "fp32", false);
  EXPECT_FALSE(w.ta);
  EXPECT_TRUE(w.tb);
  EXPECT_TRUE(w.accumulate);
  EXPECT_EQ(w.c_type, DType::F32);
  EXPECT_EQ(w.c_bytes(), 1024u * 4096u * 4u);
}

TEST(KbGemmConfigTest, Fp8IsTnWithScalePointersAndHybridFormats) {
  GemmDims fprop = gemm_dims(1, 128, 256, 512, "TN", false, "bf16", true);
  EXPECT_TRUE(fprop.a_scale && fprop.b_scale);
  EXPECT_EQ(fprop.b_type, DType::E4M3);
  EXPECT_TRUE(fprop.fast_accum);
  GemmDims dgrad = gemm_dims(1, 128, 256, 512, "NN", false, "bf16", true);
  EXPECT_TRUE(dgrad.ta);
  EXPECT_FALSE(dgrad.tb);
  EXPECT_EQ(dgrad.a_type, DType::E4M3);
  EXPECT_EQ(dgrad.b_type, DType::E5M2);
  EXPECT_FALSE(dgrad.fast_accum);
  EXPECT_TRUE(dgrad.a_scale && dgrad.b_scale);
  EXPECT_EQ(dgrad.a_bytes(), 512u * 256u);
}

TEST(KbGemmConfigTest, GroupedOperandsStartOn256ByteBoundaries) {
  // 3 experts of 100 bf16 values (200 bytes): strides of 256, 768 bytes in all.
  EXPECT_EQ(aligned_offsets(200, 3), (std::vector<size_t>{0, 256, 512}));
  EXPECT_EQ(aligned_total(200, 3), 768u);
  EXPECT_EQ(aligned_offsets(512, 2), (std::vector<size_t>{0, 512}));
}

}  // namespace
}  // namespace trainsim::kb
