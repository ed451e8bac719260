// CPU references of the self-check: hand-computed cases and a finite-difference check of the
// attention backward.
#include <gtest/gtest.h>

#include <cmath>

#include "reference.h"

namespace trainsim::kb {
namespace {

TEST(KbReferenceTest, StorageFormatsDecode) {
  EXPECT_EQ(bf16_to_float(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_float(0xC040), -3.0f);
  EXPECT_EQ(round_to_bf16(1.00390625f), 1.0f);       // tie -> even mantissa 0
  EXPECT_EQ(round_to_bf16(1.01171875f), 1.015625f);  // tie -> even mantissa 2
  EXPECT_EQ(e4m3_to_float(0x38), 1.0f);
  EXPECT_EQ(e4m3_to_float(0x7E), 448.0f);
  EXPECT_EQ(e4m3_to_float(0x01), std::ldexp(1.0f, -9));
  EXPECT_TRUE(std::isnan(e4m3_to_float(0x7F)));
  EXPECT_EQ(e5m2_to_float(0x3C), 1.0f);
  EXPECT_EQ(e5m2_to_float(0xFB), -57344.0f);
  EXPECT_TRUE(std::isinf(e5m2_to_float(0x7C)));
}

TEST(KbReferenceTest, GemmIsColumnMajorWithTransposesScalesAndBeta) {
  GemmDims g;
  g.m = 2;
  g.n = 1;
  g.k = 2;
  // op(A) = [[1, 2], [3, 4]], B = [5, 6]^T: D = [17, 39].
  EXPECT_EQ(gemm_ref(g, {1, 3, 2, 4}, {5, 6}, {}), (std::vector<float>{17, 39}));
  g.ta = true;
  g.accumulate = true;
  EXPECT_EQ(gemm_ref(g, {1, 2, 3, 4}, {5, 6}, {1, 1}, 2.0f, 0.5f), (std::vector<float>{18, 40}));
}

TEST(KbReferenceTest, CausalAttentionForwardByHand) {
  // One head, s = 2, d = 1, scale 1: row 0 sees key 0 only; row 1 scores [0, ln 3] -> P = [1/4, 3/4].
  SdpaProblem p;
  p.s = 2;
  SdpaFwdRef r = sdpa_fwd_ref(p, {1, 1}, {0, std::log(3.0f)}, {2, 6});
  EXPECT_FLOAT_EQ(r.o[0], 2);
  EXPECT_FLOAT_EQ(r.o[1], 5);
  EXPECT_FLOAT_EQ(r.stats[0], 0);
  EXPECT_FLOAT_EQ(r.stats[1], std::log(4.0f));
  // GQA: two query heads share the kv head; the second (q = 0) averages v on row 1.
  p.hq = 2;
  SdpaFwdRef g = sdpa_fwd_ref(p, {1, 1, 0, 0}, {0, std::log(3.0f)}, {2, 6});
  EXPECT_FLOAT_EQ(g.o[3], 4);
}

TEST(KbReferenceTest, AttentionBackwardMatchesFiniteDifferences) {
  SdpaProblem p;
  p.hq = 2;
  p.hkv = 1;
  p.s = 3;
  p.dqk = 2;
  p.dv = 2;
  p.scale = 0.7f;
  std::vector<float> q = {0.3f, -0.2f, 0.5f, 0.1f, -0.4f, 0.8f, 0.2f, 0.2f, -0.6f, 0.4f, 0.9f, -0.1f};
  std::vector<float> k = {0.7f, 0.1f, -0.3f, 0.5f, 0.2f, -0.8f};
  std::vector<float> v = {1.0f, -0.5f, 0.3f, 0.6f, -0.2f, 0.9f};
  std::vector<float> d_o = {0.2f, -0.1f, 0.4f, 0.3f, -0.5f, 0.1f, 0.6f, -0.2f, 0.1f, 0.1f, -0.3f, 0.7f};
  auto loss = [&](const std::vector<float>& qq, const std::vector<float>& kk, const std::vector<float>& vv) {
    SdpaFwdRef f = sdpa_fwd_ref(p, qq, kk, vv);
    double l = 0;
    for (size_t i = 0; i < f.o.size(); ++i) l += static_cast<double>(f.o[i]) * d_o[i];
    return l;
  };
  SdpaBwdRef g = sdpa_bwd_ref(p, q, k, v, d_o);
  auto check = [&](std::vector<float>& x, const std::vector<float>& grad, int which) {
    for (size_t i = 0; i < x.size(); ++i) {
      const float keep = x[i], h = 1e-2f;
      x[i] = keep + h;
      double up = which == 0 ? loss(x, k, v) : which == 1 ? loss(q, x, v) : loss(q, k, x);
      x[i] = keep - h;
      double down = which == 0 ? loss(x, k, v) : which == 1 ? loss(q, x, v) : loss(q, k, x);
      x[i] = keep;
      EXPECT_NEAR(grad[i], (up - down) / (2 * h), 2e-4) << "tensor " << which << " element " << i;
    }
  };
  check(q, g.dq, 0);
  check(k, g.dk, 1);
  check(v, g.dv, 2);
}

TEST(KbReferenceTest, CrossEntropyByHand) {
  CrossEntropyRef r = cross_entropy_ref(1, 2, {0, std::log(3.0f)}, {1});
  EXPECT_FLOAT_EQ(r.lse[0], std::log(4.0f));
  EXPECT_FLOAT_EQ(r.loss[0], std::log(4.0f / 3.0f));
  EXPECT_FLOAT_EQ(r.grad[0], 0.25f);
  EXPECT_FLOAT_EQ(r.grad[1], -0.25f);
}

TEST(KbReferenceTest, CompareNamesTheWorstElement) {
  Comparison ok = compare({1.0f, 2.01f}, {1.0f, 2.0f}, 0, 0.01);
  EXPECT_TRUE(ok.ok);
  Comparison bad = compare({1.0f, 2.1f}, {1.0f, 2.0f}, 0, 0.01);
  EXPECT_FALSE(bad.ok);
  EXPECT_EQ(bad.worst, 1u);
  EXPECT_EQ(bad.detail,
            "max abs err 1.00e-01, max rel err 5.00e-02 (atol 0e+00, rtol 1e-02); worst at [1]: got 2.1, expected 2");
  EXPECT_FALSE(compare({NAN}, {1.0f}, 1, 1).ok);
  EXPECT_EQ(compare({1.0f}, {1.0f, 2.0f}, 1, 1).detail, "size 1, expected 2");
}

}  // namespace
}  // namespace trainsim::kb
