// Measured-points efficiency model (compute/point_model.h) on synthetic points with answers
// computed by hand: inverse-square-distance weighted log efficiency of the nearest points of a
// class, in log feature space.
#include "compute/point_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "compute/cost.h"
#include "core/text.h"
#include "system/system_config.h"

namespace trainsim {
namespace {

PackedKey tn(double m, double n = 4096, double k = 4096) {
  return matmul_key(1, m, k, n, KeyLayout::TN, false, KeyDtype::bf16);
}

// Forward GEMMs along m: 0.4 at m = 1024, 0.6 at m = 4096.
PointModel two_along_m() { return PointModel(KeyKind::Matmul, {{tn(1024), 0.4}, {tn(4096), 0.6}}); }

TEST(PointModelTest, MeasuredShapeAnswersItsEfficiency) {
  const PointModel m = two_along_m();
  EXPECT_EQ(m.points(), 2u);
  const EfficiencyAnswer a = m.predict(tn(4096));
  EXPECT_EQ(a.source, EfficiencySource::Measured);
  EXPECT_DOUBLE_EQ(a.efficiency, 0.6);
  // b·m counts as rows: b = 2, m = 512 is the 1024-row point's shape.
  const EfficiencyAnswer b = m.predict(matmul_key(2, 512, 4096, 4096, KeyLayout::TN, false, KeyDtype::bf16));
  EXPECT_EQ(b.source, EfficiencySource::Measured);
  EXPECT_DOUBLE_EQ(b.efficiency, 0.4);
}

TEST(PointModelTest, BetweenTwoPointsTheGeometricMeanAtEqualLogDistance) {
  const EfficiencyAnswer a = two_along_m().predict(tn(2048));
  EXPECT_EQ(a.source, EfficiencySource::Interpolated);
  EXPECT_NEAR(a.efficiency, std::sqrt(0.4 * 0.6), 1e-12);
}

TEST(PointModelTest, BeyondThePointsInverseSquareDistanceWeights) {
  // m = 8192: ln 2 from 4096 (weight 1), 3 ln 2 from 1024 (weight 1/9).
  const EfficiencyAnswer a = two_along_m().predict(tn(8192));
  EXPECT_EQ(a.source, EfficiencySource::Extrapolated);
  EXPECT_NEAR(a.efficiency, std::exp((9 * std::log(0.6) + std::log(0.4)) / 10), 1e-12);
}

TEST(PointModelTest, OnlyTheNearestFourCount) {
  // Five points along m; the query at m = 1024 is 1, 1, 2, 2 and 3 octaves (ln 2 each) from
  // them: the farthest (eff 0.9) is left out, weights 1, 1, 1/4, 1/4.
  const PointModel m(KeyKind::Matmul, {{tn(512), 0.3}, {tn(2048), 0.5}, {tn(256), 0.2}, {tn(4096), 0.6}, {tn(8192), 0.9}});
  const EfficiencyAnswer a = m.predict(tn(1024));
  EXPECT_EQ(a.source, EfficiencySource::Interpolated);
  const double y = (std::log(0.3) + std::log(0.5) + 0.25 * std::log(0.2) + 0.25 * std::log(0.6)) / 2.5;
  EXPECT_NEAR(a.efficiency, std::exp(y), 1e-12);
}

TEST(PointModelTest, ClassesApartAndEveryPointWhenTheClassHasNone) {
  // A data-gradient point at 0.3 beside forward points: a forward query ignores it.
  PointModel m(KeyKind::Matmul, {{tn(1024), 0.4},
                                 {tn(4096), 0.6},
                                 {matmul_key(1, 2048, 4096, 4096, KeyLayout::NN, false, KeyDtype::bf16), 0.3}});
  EXPECT_NEAR(m.predict(tn(2048)).efficiency, std::sqrt(0.4 * 0.6), 1e-12);
  // A weight-gradient query (no point of its class): every point, reported as extrapolated;
  // the NN point has the query's features (weight as at distance 1e-6) and dominates.
  const EfficiencyAnswer a = m.predict(matmul_key(1, 2048, 4096, 4096, KeyLayout::NT, true, KeyDtype::fp32));
  EXPECT_EQ(a.source, EfficiencySource::Extrapolated);
  EXPECT_NEAR(a.efficiency, 0.3, 1e-9);
}

TEST(PointModelTest, GroupedGemmFeaturesAndStages) {
  const auto key = [](double ng, double m, KeyStage stage, KeyDtype main_grad) {
    return grouped_key(ng, m, 3072, 5120, KeyDtype::bf16, KeyDtype::bf16, main_grad, stage,
                       stage != KeyStage::fwd, stage == KeyStage::bwd_grad_w, stage != KeyStage::fwd,
                       stage == KeyStage::fwd);
  };
  const PointModel m(KeyKind::Grouped, {{key(40, 616, KeyStage::fwd, KeyDtype::fp32), 0.45},
                                        {key(40, 2464, KeyStage::fwd, KeyDtype::fp32), 0.5},
                                        {key(40, 616, KeyStage::bwd_grad_w, KeyDtype::fp32), 0.25},
                                        {key(40, 616, KeyStage::bwd_grad_w, KeyDtype::bf16), 0.35}});
  // The forward does not read the main-grad dtype: the bf16 forward is the measured fp32 one.
  EfficiencyAnswer a = m.predict(key(40, 616, KeyStage::fwd, KeyDtype::bf16));
  EXPECT_EQ(a.source, EfficiencySource::Measured);
  EXPECT_DOUBLE_EQ(a.efficiency, 0.45);
  // Tokens per expert between the two forward points (2 octaves apart, query at 1).
  a = m.predict(key(40, 1232, KeyStage::fwd, KeyDtype::fp32));
  EXPECT_EQ(a.source, EfficiencySource::Interpolated);
  EXPECT_NEAR(a.efficiency, std::sqrt(0.45 * 0.5), 1e-12);
  // The weight gradient accumulating into fp32 is its own class: 0.25, not 0.35.
  a = m.predict(key(40, 616, KeyStage::bwd_grad_w, KeyDtype::fp32));
  EXPECT_DOUBLE_EQ(a.efficiency, 0.25);
  a = m.predict(key(80, 616, KeyStage::bwd_grad_w, KeyDtype::fp32));
  EXPECT_EQ(a.source, EfficiencySource::Extrapolated);  // ng beyond the class's 40
  EXPECT_DOUBLE_EQ(a.efficiency, 0.25);                  // its only point
}

TEST(PointModelTest, AttentionByHeadsSequenceHeadDimsAndGqa) {
  const auto key = [](double seq, double heads, double kv, bool contiguous) {
    return sdpa_key(1, seq, heads, kv, 128, 128, contiguous);
  };
  const PointModel m(KeyKind::Sdpa, {{key(4096, 32, 8, true), 0.7},
                                     {key(4096, 32, 32, true), 0.5},
                                     {key(16384, 32, 8, true), 0.9},
                                     {key(4096, 32, 8, false), 0.6}});
  // GQA 2 between GQA 1 (0.5) and 4 (0.7), one octave from each; the sequence 16384 point is
  // sqrt((2 ln 2)² + (ln 2)²) away: weight 1/5; the strided point is another class.
  const EfficiencyAnswer a = m.predict(key(4096, 32, 16, true));
  EXPECT_EQ(a.source, EfficiencySource::Interpolated);
  EXPECT_NEAR(a.efficiency, std::exp((std::log(0.5) + std::log(0.7) + 0.2 * std::log(0.9)) / 2.2), 1e-12);
  EXPECT_EQ(m.predict(key(4096, 32, 8, false)).efficiency, 0.6);
  // batch·heads is one feature: batch 2 × 16 heads is the 32-head point.
  EXPECT_EQ(m.predict(sdpa_key(2, 4096, 16, 4, 128, 128, true)).source, EfficiencySource::Measured);
}

TEST(PointModelTest, LeaveOneOutPredictsEachPointWithoutItsShape) {
  const PointModel m(KeyKind::Matmul, {{tn(1024), 0.4}, {tn(2048), 0.5}, {tn(4096), 0.6}});
  const auto held = m.leave_one_out();
  ASSERT_EQ(held.size(), 3u);
  EXPECT_DOUBLE_EQ(held[1].measured, 0.5);
  EXPECT_NEAR(held[1].predicted, std::sqrt(0.4 * 0.6), 1e-12);
  // The end points from the other two: weights 1 and 1/4.
  EXPECT_NEAR(held[0].predicted, std::exp((std::log(0.5) + 0.25 * std::log(0.6)) / 1.25), 1e-12);
  // A single point has nothing to go by.
  EXPECT_EQ(PointModel(KeyKind::Matmul, {{tn(1024), 0.4}}).leave_one_out()[0].predicted, 0);
}

TEST(PointModelTest, RejectsBadPointsAndAnswersNothingForOtherKinds) {
  EXPECT_THROW(PointModel(KeyKind::Matmul, {{tn(1024), 0}}), std::invalid_argument);
  EXPECT_THROW(PointModel(KeyKind::Matmul, {{tn(1024), std::nan("")}}), std::invalid_argument);
  EXPECT_THROW(PointModel(KeyKind::Sdpa, {{tn(1024), 0.5}}), std::invalid_argument);
  EXPECT_THROW(PointModel(KeyKind::None, {}), std::invalid_argument);
  const PointModel m = two_along_m();
  EXPECT_EQ(m.predict(sdpa_key(1, 4096, 32, 8, 128, 128, true)).source, EfficiencySource::Default);
  EXPECT_EQ(m.predict(PackedKey{}).source, EfficiencySource::Default);
  EXPECT_EQ(PointModel().predict(tn(1024)).source, EfficiencySource::Default);
}

// The range of accurate_efficient_factor holds for a points model's efficiencies too: 1e300 gave
// infinite held-out errors and a structure fit of zeros.
TEST(PointModelTest, AnEfficiencyOutsideTheSystemFilesRangeThrows) {
  for (const double eff : {1e300, 1e-300}) {
    try {
      (void)PointModel(KeyKind::Matmul, {{tn(1024), 0.5}, {tn(2048), eff}});
      FAIL() << eff;
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()), "point '" + format_packed_key(tn(2048)) + "': efficiency " + format_number(eff) +
                                           " is outside [1e-06, 1e+02] (the range of accurate_efficient_factor)");
    }
  }
  EXPECT_EQ(PointModel(KeyKind::Matmul, {{tn(1024), 1e-6}, {tn(2048), 100}}).points(), 2u);
}

// kernel_cost: the table first, then the points model; the log counts each kind.
TEST(PointModelTest, KernelCostUsesTheModelsEfficiency) {
  SystemConfig sys;
  sys.ops["default"].efficient_factor = 0.5;
  sys.ops["default"].peak_flops = 1e15;
  ComputeOpConfig& mm = sys.ops["matmul"];
  mm.peak_flops = 1e15;
  mm.efficient_factor = 0.25;
  mm.point_model = std::make_shared<PointModel>(two_along_m());
  sys.bandwidths["default"].bytes_per_s = 1e12;
  ClassTable classes(sys);
  EfficiencyLog log;
  Kernel k;
  k.op = OpClass::Matmul;
  k.flops = 2.0 * 2048 * 4096 * 4096;
  k.key = tn(2048);
  const KernelCost c = kernel_cost(classes, k, &log);
  EXPECT_EQ(c.source, EfficiencySource::Interpolated);
  EXPECT_NEAR(c.efficiency, std::sqrt(0.24), 1e-12);
  EXPECT_NEAR(c.time_s, k.flops / (1e15 * std::sqrt(0.24)), 1e-15);
  EXPECT_EQ(log.interpolated, 1);
  EXPECT_TRUE(log.misses.empty());
  EXPECT_EQ(efficiency_source_of(mm, tn(4096)), EfficiencySource::Measured);
  EXPECT_EQ(efficiency_source_of(mm, tn(8192)), EfficiencySource::Extrapolated);
}

}  // namespace
}  // namespace trainsim
