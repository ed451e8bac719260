// Shape keys: exact round trips, FLOP convention, error messages.
#include <gtest/gtest.h>

#include "calibration/shape_key.h"
#include "core/error.h"

namespace trainsim {
namespace {

const char* kTn = "b=1, m=4096, k=4096, n=6144, layout=TN, accumulate=False, out_dtype=bf16";
const char* kGrouped =
    "ng=40, M=2048, N=3072, K=5120, dtype=bf16, out_dtype=bf16, main_grad_dtype=fp32, stage=bwd_grad_w, "
    "grad=True, accumulate=True, use_split_accumulator=True, single_output=False";
const char* kSdpa =
    "batch=1, seq_len=4096, head_num=32, kv_head_num=8, qk_head_dim=128, v_head_dim=128, qkv_contiguous=True";

std::string parse_error(const std::string& op, const std::string& key) {
  try {
    (void)parse_shape_key(op, key, "s.json", "/shapes/0/key");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(KernelsShapeKeyTest, MatmulRoundTrip) {
  ShapeKey k = parse_shape_key("matmul", kTn, "s.json", "/k");
  const auto& m = std::get<MatmulShape>(k);
  EXPECT_EQ(m.b, 1);
  EXPECT_EQ(m.m, 4096);
  EXPECT_EQ(m.k, 4096);
  EXPECT_EQ(m.n, 6144);
  EXPECT_EQ(m.layout, "TN");
  EXPECT_FALSE(m.accumulate);
  EXPECT_EQ(m.out_dtype, "bf16");
  EXPECT_EQ(format_shape_key(k), kTn);
}

TEST(KernelsShapeKeyTest, GroupedAndSdpaRoundTrip) {
  ShapeKey g = parse_shape_key("group_matmul", kGrouped, "s.json", "/k");
  const auto& gg = std::get<GroupedMatmulShape>(g);
  EXPECT_EQ(gg.ng, 40);
  EXPECT_EQ(gg.m, 2048);
  EXPECT_EQ(gg.stage, "bwd_grad_w");
  EXPECT_TRUE(gg.accumulate);
  EXPECT_FALSE(gg.single_output);
  EXPECT_EQ(format_shape_key(g), kGrouped);
  ShapeKey s = parse_shape_key("sdp_bwd", kSdpa, "s.json", "/k");
  EXPECT_EQ(std::get<SdpaShape>(s).kv_head_num, 8);
  EXPECT_EQ(format_shape_key(s), kSdpa);
}

TEST(KernelsShapeKeyTest, FlopsFollowTheSimulatorConvention) {
  // 2*b*m*n*k = 2*1*4096*6144*4096.
  EXPECT_DOUBLE_EQ(shape_flops("matmul", parse_shape_key("matmul", kTn, "", "")), 206158430208.0);
  // 2*ng*M*N*K = 2*40*2048*3072*5120.
  EXPECT_DOUBLE_EQ(shape_flops("group_matmul", parse_shape_key("group_matmul", kGrouped, "", "")),
                   2576980377600.0);
  // fwd 2*B*S^2*h*(d_qk+d_v) = 2*4096^2*32*256; bwd 2.5x; no causal halving.
  ShapeKey s = parse_shape_key("sdp_fwd", kSdpa, "", "");
  EXPECT_DOUBLE_EQ(shape_flops("sdp_fwd", s), 274877906944.0);
  EXPECT_DOUBLE_EQ(shape_flops("sdp_bwd", s), 687194767360.0);
  // MLA d_qk=192, d_v=128, h=16: 2*4096^2*16*320.
  ShapeKey mla = parse_shape_key(
      "sdp_fwd",
      "batch=1, seq_len=4096, head_num=16, kv_head_num=16, qk_head_dim=192, v_head_dim=128, qkv_contiguous=True",
      "", "");
  EXPECT_DOUBLE_EQ(shape_flops("sdp_fwd", mla), 171798691840.0);
}

TEST(KernelsShapeKeyTest, ErrorsNameTheFieldAndWhatWasExpected) {
  EXPECT_EQ(parse_error("matmul", "b=1, m=4096, k=4096, n=6144, layout=TT, accumulate=False, out_dtype=bf16"),
            "s.json: /shapes/0/key: shape key 'b=1, m=4096, k=4096, n=6144, layout=TT, accumulate=False, "
            "out_dtype=bf16': layout: expected one of TN, NN, NT, got 'TT'; did you mean 'TN'?");
  EXPECT_EQ(parse_error("matmul", "b=1, m=4096, k=4096, n=6144, layout=TN, accumulate=false, out_dtype=bf16"),
            "s.json: /shapes/0/key: shape key 'b=1, m=4096, k=4096, n=6144, layout=TN, accumulate=false, "
            "out_dtype=bf16': accumulate: expected one of True, False, got 'false'; did you mean 'False'?");
  EXPECT_EQ(parse_error("matmul", "b=1, k=4096, m=4096, n=6144, layout=TN, accumulate=False, out_dtype=bf16"),
            "s.json: /shapes/0/key: shape key 'b=1, k=4096, m=4096, n=6144, layout=TN, accumulate=False, "
            "out_dtype=bf16': field 2: expected 'm', got 'k'");
  EXPECT_EQ(parse_error("matmul", "b=1, m=4096.0, k=4096, n=6144, layout=TN, accumulate=False, out_dtype=bf16"),
            "s.json: /shapes/0/key: shape key 'b=1, m=4096.0, k=4096, n=6144, layout=TN, accumulate=False, "
            "out_dtype=bf16': m: expected a positive integer, got '4096.0'");
  EXPECT_EQ(parse_error("matmul", "b=1,m=4096"),
            "s.json: /shapes/0/key: shape key 'b=1,m=4096': expected 7 fields (b, m, k, n, layout, accumulate, "
            "out_dtype), got 1");
  EXPECT_EQ(parse_error("matmull", kTn),
            "s.json: /shapes/0/key: op class 'matmull' has no shape keys; valid values: matmul, fp8_matmul, "
            "group_matmul, fp8_group_matmul, sdp_fwd, sdp_bwd; did you mean 'matmul'?");
}

}  // namespace
}  // namespace trainsim
