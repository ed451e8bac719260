// Fused-attention time structure (compute/attention_model.h): its terms by hand, the fit
// recovering a synthetic kernel's parameters exactly, and the measured-points model answering
// held-out shapes of that kernel exactly through it.
#include "compute/attention_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "compute/point_model.h"

namespace trainsim {
namespace {

TEST(AttentionModelTest, TermsCountCtasWavesAndTilePairsUnderTheCausalMask) {
  double x[kAttentionTerms];
  // 4096 / 128 = 32 query blocks, 32 heads: 1024 CTAs, 32·32·33/2 = 16896 tile pairs; at P = 128
  // 8 waves and 16896 / 128 = 132 rounds (above the longest CTA's 32).
  attention_terms({1, 4096, 32, 8, 128, 128}, 128, x);
  EXPECT_DOUBLE_EQ(x[0], 1);
  EXPECT_DOUBLE_EQ(x[1], 8);
  EXPECT_DOUBLE_EQ(x[2], 132);
  EXPECT_DOUBLE_EQ(x[3], 132);
  // 1000 rows: 8 blocks (the last partial); 2 heads: 16 CTAs, one wave; 2·8·9/2 = 72 pairs,
  // 72 / 128 rounds < the longest CTA's 8 blocks; head dims 64 + 64: half a 256 round.
  attention_terms({1, 1000, 2, 2, 64, 64}, 128, x);
  EXPECT_DOUBLE_EQ(x[1], 1);
  EXPECT_DOUBLE_EQ(x[2], 8);
  EXPECT_DOUBLE_EQ(x[3], 4);
  EXPECT_DOUBLE_EQ(attention_flops({2, 1000, 2, 2, 64, 64}), 2.0 * 2 * 1000 * 1000 * 2 * 128);
}

// A synthetic kernel: P = 128 (2^(28/4), a candidate), fixed 3e9, 5e8 per CTA wave, 2e8 per
// round apart from the head dim, 1.5e9 per round at d_qk + d_v = 256 (FLOP-convention units).
constexpr double kP = 128, kC[kAttentionTerms] = {3e9, 5e8, 2e8, 1.5e9};

double synthetic_efficiency(const AttentionShape& s) {
  double x[kAttentionTerms];
  attention_terms(s, kP, x);
  double t = 0;
  for (int j = 0; j < kAttentionTerms; ++j) t += kC[j] * x[j];
  return attention_flops(s) / t;
}

std::vector<AttentionShape> grid() {
  std::vector<AttentionShape> out;
  for (double seq : {1024.0, 2048.0, 4096.0, 8192.0, 32768.0})
    for (double heads : {4.0, 16.0, 64.0})
      for (double d : {64.0, 128.0, 192.0}) out.push_back({1, seq, heads, heads / 4, d, d});
  return out;
}

TEST(AttentionModelTest, FitRecoversTheSyntheticKernel) {
  const std::vector<AttentionShape> shapes = grid();
  std::vector<double> eff;
  for (const auto& s : shapes) eff.push_back(synthetic_efficiency(s));
  const AttentionFit f = fit_attention(shapes, eff);
  ASSERT_TRUE(f.fitted());
  EXPECT_DOUBLE_EQ(f.parallel, kP);
  for (int j = 0; j < kAttentionTerms; ++j) EXPECT_NEAR(f.c[j] / kC[j], 1, 1e-9) << j;
  EXPECT_NEAR(f.rms, 0, 1e-9);
  EXPECT_EQ(f.points, shapes.size());
  // Fewer than kAttentionStructurePoints points: not fitted.
  const std::vector<AttentionShape> few(shapes.begin(), shapes.begin() + 9);
  EXPECT_FALSE(fit_attention(few, std::vector<double>(eff.begin(), eff.begin() + 9)).fitted());
  // Two sequence lengths (the first 18 shapes: 1024 and 2048): not fitted; three: fitted.
  const std::vector<AttentionShape> two(shapes.begin(), shapes.begin() + 18);
  const std::vector<AttentionShape> three(shapes.begin(), shapes.begin() + 27);
  EXPECT_FALSE(fit_attention(two, std::vector<double>(eff.begin(), eff.begin() + 18)).fitted());
  EXPECT_TRUE(fit_attention(three, std::vector<double>(eff.begin(), eff.begin() + 27)).fitted());
}

TEST(AttentionModelTest, PointsModelAnswersHeldOutShapesThroughTheStructure) {
  std::vector<std::pair<PackedKey, double>> points;
  for (const auto& s : grid())
    points.emplace_back(sdpa_key(s.batch, s.seq, s.heads, s.kv_heads, s.d_qk, s.d_v, true), synthetic_efficiency(s));
  const PointModel m(KeyKind::Sdpa, points);
  ASSERT_TRUE(m.structure().fitted());
  // A shape between the points (batch 2, 24 heads, GQA 4, seq 3000, head dim 160): the kernel's
  // own efficiency, the residuals of the neighbours being zero.
  const AttentionShape between{2, 3000, 24, 6, 160, 160};
  const EfficiencyAnswer a = m.predict(sdpa_key(2, 3000, 24, 6, 160, 160, true));
  EXPECT_EQ(a.source, EfficiencySource::Interpolated);
  EXPECT_NEAR(a.efficiency / synthetic_efficiency(between), 1, 1e-9);
  // Beyond them (seq 131072): extrapolated, still the kernel's.
  const EfficiencyAnswer far = m.predict(sdpa_key(1, 131072, 8, 1, 128, 128, true));
  EXPECT_EQ(far.source, EfficiencySource::Extrapolated);
  EXPECT_NEAR(far.efficiency / synthetic_efficiency({1, 131072, 8, 1, 128, 128}), 1, 1e-9);
  // Every point held out (the structure refitted without it) comes back exactly.
  for (const auto& h : m.leave_one_out()) EXPECT_NEAR(h.predicted / h.measured, 1, 1e-9) << format_packed_key(h.key);
}

// A measured point off the kernel by +10 %: its residual, not the structure, carries it to a
// neighbour, weighted as the nearest points of the measured-points model.
TEST(AttentionModelTest, ResidualsOfTheNearestPointsCorrectTheStructure) {
  std::vector<std::pair<PackedKey, double>> points;
  for (const auto& s : grid()) {
    const bool bumped = s.seq == 4096 && s.heads == 16 && s.d_qk == 128;
    points.emplace_back(sdpa_key(s.batch, s.seq, s.heads, s.kv_heads, s.d_qk, s.d_v, true),
                        synthetic_efficiency(s) * (bumped ? 1.1 : 1.0));
  }
  const PointModel m(KeyKind::Sdpa, points);
  EXPECT_DOUBLE_EQ(m.predict(sdpa_key(1, 4096, 16, 4, 128, 128, true)).efficiency,
                   synthetic_efficiency({1, 4096, 16, 4, 128, 128}) * 1.1);
  // Halfway in log seq between the bumped point and seq 8192: the structure (refitted with the
  // bump) times exp of the inverse-square-distance weighted residuals of the 4 nearest points.
  const PackedKey qk = sdpa_key(1, std::sqrt(4096.0 * 8192.0), 16, 4, 128, 128, true);
  const AttentionShape q = attention_shape(qk);  // the key holds seq 5793
  const PointFeatures fq = point_features(qk);
  std::vector<std::pair<double, double>> near;  // (distance², residual)
  for (const auto& [key, eff] : points) {
    const PointFeatures fp = point_features(key);
    double d2 = 0;
    for (int d = 0; d < fq.n; ++d) d2 += (fp.x[d] - fq.x[d]) * (fp.x[d] - fq.x[d]);
    near.emplace_back(d2, std::log(eff) - m.structure().log_efficiency(attention_shape(key)));
  }
  std::sort(near.begin(), near.end());
  double acc = 0, wsum = 0;
  for (int j = 0; j < kPointNeighbours; ++j) {
    acc += near[j].second / near[j].first;
    wsum += 1 / near[j].first;
  }
  const double base = std::exp(m.structure().log_efficiency(q));
  const double got = m.predict(qk).efficiency;
  EXPECT_NEAR(got, base * std::exp(acc / wsum), 1e-12);
  EXPECT_GT(got, base * 1.02);  // the bumped point is one of the two nearest
}

}  // namespace
}  // namespace trainsim
