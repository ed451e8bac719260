// GEMM efficiency model on synthetic grids with hand-computed answers: measured nodes, log-space
// interpolation on unpadded rows, the m series, holes filled from their neighbours (axes weighted
// by 1 / log span and by how well each axis' line holds), clamped extrapolation, leave-one-out;
// and its use by kernel_cost.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <vector>

#include "compute/cost.h"
#include "compute/gemm_model.h"

namespace trainsim {
namespace {

GemmModel grid(const std::vector<GemmPoint>& points) { return GemmModel(points); }

// Along m only (n = k = 64): 1 µs at m = 32, 8 µs at m = 128, i.e. 1/32 and 1/16 µs per row.
GemmModel along_m() { return grid({{32, 64, 64, 1e-6}, {128, 64, 64, 8e-6}}); }

TEST(GemmModelTest, MeasuredNodeAnswersItsTime) {
  const GemmModel g = along_m();
  EXPECT_EQ(g.points(), 2u);
  const GemmAnswer a = g.predict(128, 64, 64);
  EXPECT_EQ(a.source, EfficiencySource::Measured);
  EXPECT_NEAR(a.time_s, 8e-6, 1e-18);
}

TEST(GemmModelTest, InterpolatesTimePerRowInLogSpace) {
  const GemmModel g = along_m();
  // m = 64 sits half-way in log m: time per row sqrt(1/32 · 1/16) µs, × 64 rows = 2·sqrt(2) µs.
  GemmAnswer a = g.predict(64, 64, 64);
  EXPECT_EQ(a.source, EfficiencySource::Interpolated);
  EXPECT_NEAR(a.time_s, 2 * std::sqrt(2.0) * 1e-6, 1e-15);
  // m = 40 (rows not padded) at weight log(1.25)/log(4) towards m = 128: 40 · 1/32 µs ·
  // 2^(log(1.25)/log(4)) = 1.25 · sqrt(1.25) µs = 1.3975 µs. (40 is not a multiple of 16, but
  // the grid has no unaligned rows: the aligned series answers.)
  a = g.predict(40, 64, 64);
  EXPECT_EQ(a.source, EfficiencySource::Interpolated);
  EXPECT_NEAR(a.time_s, 1.25 * std::sqrt(1.25) * 1e-6, 1e-15);
  EXPECT_NEAR(a.time_s, 1.3975e-6, 0.0001e-6);
}

TEST(GemmModelTest, BeyondTheGridHoldsTheEdgeThroughput) {
  const GemmModel g = along_m();
  // 256 rows at the m = 128 throughput (1/16 µs per row): 16 µs.
  GemmAnswer a = g.predict(256, 64, 64);
  EXPECT_EQ(a.source, EfficiencySource::Extrapolated);
  EXPECT_NEAR(a.time_s, 16e-6, 1e-15);
  // n four times the largest: four times the time of n = 64.
  a = g.predict(128, 256, 64);
  EXPECT_EQ(a.source, EfficiencySource::Extrapolated);
  EXPECT_NEAR(a.time_s, 32e-6, 1e-15);
}

TEST(GemmModelTest, UnalignedRowsUseTheirOwnSeries) {
  // Aligned rows 32, 128 as above; the m + 1 rows 33, 129 twice as slow per row
  // (33 rows at 1/16 µs: 2.0625 µs; 129 rows at 1/8 µs: 16.125 µs).
  const GemmModel g = grid({{32, 64, 64, 1e-6}, {128, 64, 64, 8e-6}, {33, 64, 64, 33e-6 / 16}, {129, 64, 64, 129e-6 / 8}});
  // m = 64 is aligned: 2·sqrt(2) µs as without the other series.
  EXPECT_NEAR(g.predict(64, 64, 64).time_s, 2 * std::sqrt(2.0) * 1e-6, 1e-15);
  // m = 65 between 33 and 129 at weight log(65/33)/log(129/33) on the per-row times 1/16 and
  // 1/8 µs.
  const double w = std::log(65.0 / 33) / std::log(129.0 / 33);
  const GemmAnswer a = g.predict(65, 64, 64);
  EXPECT_EQ(a.source, EfficiencySource::Interpolated);
  EXPECT_NEAR(a.time_s, 65 * (1.0 / 16) * std::pow(2.0, w) * 1e-6, 1e-15);
}

TEST(GemmModelTest, HoleFilledFromItsNeighboursWeightedByLogSpan) {
  // Node (64, 64, 64) is not measured. Along m its neighbours 32 and 128 (log span log 4) give
  // 1e-9 s per m·n·k; along n, 16 and 256 (log span log 16) give 8e-9. Weights 1/log 4 and
  // 1/log 16, i.e. 2/3 and 1/3: (1e-9)^(2/3) · (8e-9)^(1/3) = 2e-9 s per m·n·k.
  const double a = 1e-9, b = 8e-9;
  const GemmModel g = grid({{32, 64, 64, a * 32 * 64 * 64},
                     {128, 64, 64, a * 128 * 64 * 64},
                     {64, 16, 64, b * 64 * 16 * 64},
                     {64, 256, 64, b * 64 * 256 * 64}});
  EXPECT_EQ(g.points(), 4u);
  const GemmAnswer ans = g.predict(64, 64, 64);
  EXPECT_EQ(ans.source, EfficiencySource::Interpolated);
  EXPECT_NEAR(ans.time_s, 2e-9 * 64 * 64 * 64, 1e-15);
}

TEST(GemmModelTest, HoleFollowsTheAxisWhoseLineHolds) {
  // Node (128, 64, 64) is not measured. Along m (32, 64 | 256, 512) every node has 1e-9 s per
  // m·n·k: the line across the gap misses neither neighbour (miss 0). Along n (4, 16 | 256, 1024)
  // the near nodes have 8e-9, the far ones 8e-9 · e^0.1: the line from n = 4 through 256 passes
  // n = 16 at log 8e-9 + 0.1 · (1 - 1/3), a miss of 0.2/3, and the same on the other side.
  // Weights 1 / (log 4 · (0 + floor)) and 1 / (log 16 · (0.2/3 + floor)).
  const double a = 1e-9, b = 8e-9, far = b * std::exp(0.1);
  std::vector<GemmPoint> pts;
  for (double m : {32.0, 64.0, 256.0, 512.0}) pts.push_back({m, 64, 64, a * m * 64 * 64});
  for (const auto& [n, s] : std::vector<std::pair<double, double>>{{4, far}, {16, b}, {256, b}, {1024, far}})
    pts.push_back({128, n, 64, s * 128 * n * 64});
  const GemmModel g = grid(pts);
  const double wm = 1 / (std::log(4.0) * kGemmAxisMissFloor);
  const double wn = 1 / (std::log(16.0) * (0.2 / 3 + kGemmAxisMissFloor));
  const double y = (wm * std::log(a) + wn * std::log(b)) / (wm + wn);
  const GemmAnswer ans = g.predict(128, 64, 64);
  EXPECT_EQ(ans.source, EfficiencySource::Interpolated);
  EXPECT_NEAR(ans.time_s / (std::exp(y) * 128 * 64 * 64), 1, 1e-12);
  // By hand: wm : wn = 1/(1.3863 · 0.005) : 1/(2.7726 · 0.07167) = 144.27 : 5.0325, so y lies
  // 5.0325/149.30 = 3.37 % of the way from log a to log b: 1e-9 · 8^0.0337 = 1.0726e-9 s per m·n·k.
  EXPECT_NEAR(ans.time_s / (128 * 64 * 64), 1.0726e-9, 0.0002e-9);
}

TEST(GemmModelTest, WavesOverTheSmsStepBetweenGridNodes) {
  // 4 SMs, 64 × 64 tiles; every node takes 1e-9 s per m·n·k times its wave factor. At m = 128:
  // n = 128 is 4 tiles (1 wave), n = 256 is 8 (2 waves): factor 1 at both nodes.
  const GemmWaves w{4, 64, 64};
  EXPECT_DOUBLE_EQ(gemm_wave_factor(w, 128, 128), 1);
  EXPECT_DOUBLE_EQ(gemm_wave_factor(w, 128, 192), 4.0 / 3);  // 6 tiles = 1.5 waves, paid as 2
  EXPECT_DOUBLE_EQ(gemm_wave_factor(w, 64, 64), 1);          // 1 tile: below one wave
  EXPECT_DOUBLE_EQ(gemm_wave_factor(GemmWaves{}, 128, 192), 1);
  std::vector<GemmPoint> pts;
  for (double m : {64.0, 128.0, 256.0})
    for (double n : {64.0, 128.0, 256.0, 512.0}) pts.push_back({m, n, 64, 1e-9 * m * n * 64 * gemm_wave_factor(w, m, n)});
  GemmModel g(pts);
  // Without waves n = 192 lies between two nodes of 1e-9 s per m·n·k: that.
  EXPECT_NEAR(g.predict(128, 192, 64).time_s, 1e-9 * 128 * 192 * 64, 1e-15);
  g.set_waves(w);
  // With them the third wave is paid: 4/3 of it. The measured nodes answer as measured.
  EXPECT_NEAR(g.predict(128, 192, 64).time_s, 1e-9 * 128 * 192 * 64 * 4 / 3, 1e-15);
  EXPECT_NEAR(g.predict(192, 256, 64).time_s, 1e-9 * 192 * 256 * 64 * gemm_wave_factor(w, 192, 256), 1e-15);
  EXPECT_EQ(g.predict(128, 256, 64).source, EfficiencySource::Measured);
  EXPECT_NEAR(g.predict(128, 256, 64).time_s, 1e-9 * 128 * 256 * 64, 1e-15);
  EXPECT_NEAR(g.time_at(1, 2, 0), 1e-9 * 128 * 256 * 64, 1e-15);
  EXPECT_THROW(g.set_waves(GemmWaves{108, 0, 256}), std::invalid_argument);
}

TEST(GemmModelTest, LeaveOneOutPredictsEachNodeWithoutIt) {
  const GemmModel g = grid({{32, 64, 64, 1e-6}, {64, 64, 64, 3e-6}, {128, 64, 64, 8e-6}});
  const auto held = g.leave_one_out();
  ASSERT_EQ(held.size(), 3u);
  // m = 32 without itself: only its neighbour 64 on one side, held (3/64 µs per row): 1.5 µs.
  EXPECT_EQ(held[0].m, 32);
  EXPECT_NEAR(held[0].measured_s, 1e-6, 1e-18);
  EXPECT_NEAR(held[0].predicted_s, 1.5e-6, 1e-15);
  // m = 64 from 32 and 128: 2·sqrt(2) µs against 3 measured.
  EXPECT_NEAR(held[1].measured_s, 3e-6, 1e-18);
  EXPECT_NEAR(held[1].predicted_s, 2 * std::sqrt(2.0) * 1e-6, 1e-15);
  // m = 128 from 64: 3/64 µs per row · 128 = 6 µs.
  EXPECT_NEAR(held[2].predicted_s, 6e-6, 1e-15);
  // The model itself is unchanged.
  EXPECT_EQ(g.predict(64, 64, 64).source, EfficiencySource::Measured);
}

TEST(GemmModelTest, OneSidedNeighbourIsAnExtrapolation) {
  const GemmModel g = grid({{32, 64, 64, 1e-6}, {64, 64, 64, 3e-6}});
  const auto held = g.leave_one_out();
  ASSERT_EQ(held.size(), 2u);
  // The grid axis is m = 32, 64: the held-out 64 has a neighbour on one side only.
  GemmModel without({32, 64}, {64}, {64}, {1e-6, 0});
  const GemmAnswer a = without.predict(64, 64, 64);
  EXPECT_EQ(a.source, EfficiencySource::Extrapolated);
  EXPECT_NEAR(a.time_s, 2e-6, 1e-15);
  EXPECT_NEAR(held[1].predicted_s, 2e-6, 1e-15);
}

TEST(GemmModelTest, NoAnswerWithoutPointsOrForEmptyShapes) {
  EXPECT_EQ(GemmModel().predict(64, 64, 64).source, EfficiencySource::Default);
  EXPECT_EQ(along_m().predict(0, 64, 64).source, EfficiencySource::Default);
  EXPECT_EQ(along_m().predict(64, std::nan(""), 64).source, EfficiencySource::Default);
  // A grid of holes only.
  EXPECT_EQ(GemmModel({32, 64}, {64}, {64}, {0, 0}).predict(48, 64, 64).source, EfficiencySource::Default);
}

TEST(GemmModelTest, RejectsBadPointsAndGrids) {
  try {
    (void)grid({{32, 64, 64, 0}});
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "GEMM point m=32 n=64 k=64 time_s=0: every value must be finite and > 0");
  }
  // 41 points on their own m, n and k: 68,921 nodes, more than 64 per point and 65,536.
  std::vector<GemmPoint> scattered;
  for (int i = 1; i <= 41; ++i) scattered.push_back({32.0 * i, 32.0 * i, 32.0 * i, 1e-6});
  try {
    (void)grid(scattered);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "41 points span a grid of 41 m × 41 n × 41 k nodes; a GEMM grid needs points on shared m, "
                           "n and k values (at most 64 nodes per point)");
  }
  scattered.pop_back();  // 40³ = 64,000 nodes: accepted
  EXPECT_EQ(grid(scattered).points(), 40u);
  EXPECT_THROW(grid({{-1, 64, 64, 1e-6}}), std::invalid_argument);
  EXPECT_THROW(GemmModel({64, 32}, {64}, {64}, {1e-6, 1e-6}), std::invalid_argument);  // not increasing
  EXPECT_THROW(GemmModel({32, 64}, {64}, {64}, {1e-6}), std::invalid_argument);        // wrong count
}

// The message of the invalid_argument `make` throws.
template <class F>
std::string thrown(F make) {
  try {
    (void)make();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<no error>";
}

// Beyond the plausible sizes and times (gemm_model.h) a prediction's logs and products overflowed:
// a node of 1e300 s or a 1e300-row axis gave infinite held-out errors.
TEST(GemmModelTest, RejectsImplausibleNumbers) {
  EXPECT_EQ(thrown([] { return grid({{1e300, 64, 64, 1e-6}}); }),
            "GEMM point m=1e+300 n=64 k=64 time_s=1e-06: sizes must be at most 1.09951e+12 and the time from 1e-09 "
            "to 1000 s");
  EXPECT_EQ(thrown([] { return grid({{32, 64, 64, 1e-300}}); }),
            "GEMM point m=32 n=64 k=64 time_s=1e-300: sizes must be at most 1.09951e+12 and the time from 1e-09 to "
            "1000 s");
  EXPECT_EQ(thrown([] { return GemmModel({32, 64}, {64}, {64}, {1e-6, 1e300}); }),
            "GEMM grid: time 1e+300 s at m=64 n=64 k=64: expected 1e-09 to 1000 s");
  EXPECT_EQ(thrown([] { return GemmModel({32, 1e300}, {64}, {64}, {1e-6, 1e-6}); }),
            "GEMM grid axis value 1e+300: must be at most 1.09951e+12");
  // The bounds themselves are plausible.
  EXPECT_EQ(grid({{kModelMaxSize, 64, 64, kModelMinTimeS}, {32, 64, 64, kModelMaxTimeS}}).points(), 2u);
}

// A second time for a node was kept over the first without a word.
TEST(GemmModelTest, RejectsASecondTimeForANode) {
  EXPECT_EQ(thrown([] { return grid({{32, 64, 64, 1e-6}, {32, 64, 64, 2e-6}}); }),
            "GEMM point m=32 n=64 k=64 time_s=2e-06: a second time for the same node (first 1e-06 s)");
}

TEST(GemmModelTest, SourceNames) {
  EXPECT_STREQ(efficiency_source_name(EfficiencySource::Default), "default");
  EXPECT_STREQ(efficiency_source_name(EfficiencySource::Measured), "measured");
  EXPECT_STREQ(efficiency_source_name(EfficiencySource::Interpolated), "interpolated");
  EXPECT_STREQ(efficiency_source_name(EfficiencySource::Extrapolated), "extrapolated");
}

// kernel_cost: a table entry first, then the model, then the op default; the log counts each.
TEST(GemmModelTest, KernelCostAsksTheModelAfterTheTable) {
  SystemConfig sys;
  sys.ops["default"].efficient_factor = 0.5;
  sys.ops["default"].peak_flops = 1e15;
  ComputeOpConfig& mm = sys.ops["matmul"];
  mm.peak_flops = 1e15;
  mm.efficient_factor = 0.25;
  mm.gemm_model = std::make_shared<GemmModel>(along_m());
  sys.bandwidths["default"].bytes_per_s = 1e12;
  const PackedKey listed = matmul_key(1, 48, 64, 64, KeyLayout::TN, false, KeyDtype::bf16);
  mm.accurate.set(format_packed_key(listed), 0.125);
  ClassTable classes(sys);
  EfficiencyLog log;
  const auto kernel = [](double b, double m, KeyLayout layout) {
    Kernel k;
    k.op = OpClass::Matmul;
    k.flops = 2 * b * m * 64 * 64;
    k.key = matmul_key(b, m, 64, 64, layout, false, KeyDtype::bf16);
    return k;
  };
  // Listed key: the table's 0.125.
  KernelCost c = kernel_cost(classes, kernel(1, 48, KeyLayout::TN), &log);
  EXPECT_EQ(c.source, EfficiencySource::Measured);
  EXPECT_DOUBLE_EQ(c.efficiency, 0.125);
  // b·m = 2·32 = 64 rows, a data-gradient layout: the model's 2·sqrt(2) µs, efficiency
  // 2·64·64·64 / (1e15 · 2·sqrt(2) µs).
  c = kernel_cost(classes, kernel(2, 32, KeyLayout::NN), &log);
  EXPECT_EQ(c.source, EfficiencySource::Interpolated);
  EXPECT_TRUE(c.measured);
  EXPECT_NEAR(c.time_s, 2 * std::sqrt(2.0) * 1e-6, 1e-15);
  EXPECT_NEAR(c.efficiency, 2.0 * 64 * 64 * 64 / (1e15 * 2 * std::sqrt(2.0) * 1e-6), 1e-12);
  // A measured node of the model counts as measured.
  c = kernel_cost(classes, kernel(1, 128, KeyLayout::TN), &log);
  EXPECT_EQ(c.source, EfficiencySource::Measured);
  EXPECT_NEAR(c.time_s, 8e-6, 1e-15);
  c = kernel_cost(classes, kernel(1, 512, KeyLayout::TN), &log);
  EXPECT_EQ(c.source, EfficiencySource::Extrapolated);
  EXPECT_NEAR(c.time_s, 32e-6, 1e-15);
  EXPECT_EQ(log.hits, 2);
  EXPECT_EQ(log.interpolated, 1);
  EXPECT_EQ(log.extrapolated, 1);
  EXPECT_TRUE(log.misses.empty());
  // The same answers without an estimate (`trainsim shapes`' in_system).
  EXPECT_EQ(efficiency_source_of(mm, listed), EfficiencySource::Measured);
  EXPECT_EQ(efficiency_source_of(mm, kernel(2, 32, KeyLayout::NN).key), EfficiencySource::Interpolated);
  EXPECT_EQ(efficiency_source_of(mm, kernel(1, 512, KeyLayout::TN).key), EfficiencySource::Extrapolated);
  EXPECT_EQ(efficiency_source_of(mm, PackedKey{}), EfficiencySource::Default);
  // Without a model the same key falls back to the op default and is a miss.
  mm.gemm_model.reset();
  ClassTable plain(sys);
  EfficiencyLog log2;
  c = kernel_cost(plain, kernel(2, 32, KeyLayout::NN), &log2);
  EXPECT_EQ(c.source, EfficiencySource::Default);
  EXPECT_FALSE(c.measured);
  EXPECT_DOUBLE_EQ(c.efficiency, 0.25);
  ASSERT_EQ(log2.misses.size(), 1u);
  EXPECT_EQ(efficiency_source_of(mm, kernel(2, 32, KeyLayout::NN).key), EfficiencySource::Default);
  // Merging adds the counts.
  log2.merge(log);
  EXPECT_EQ(log2.hits, 2);
  EXPECT_EQ(log2.interpolated, 1);
  EXPECT_EQ(log2.extrapolated, 1);
}

}  // namespace
}  // namespace trainsim
