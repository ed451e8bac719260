// α–β fit: recovers latency and bandwidth from synthetic sweeps.
#include <gtest/gtest.h>

#include <random>

#include "collectives.h"
#include "fit.h"

namespace comm_bench {
namespace {

// t = α + x/B on the default sweep for an all_reduce of 8 ranks.
std::vector<SeriesPoint> synthetic(double alpha_s, double bw, double noise, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<SeriesPoint> pts;
  for (uint64_t s : size_sweep(8, uint64_t{8} << 30, 2)) {
    const double x = model_bytes(Collective::AllReduce, static_cast<double>(s), 8);
    const double u = static_cast<double>(gen()) / 4294967296.0;  // [0, 1), same on every platform
    pts.push_back({static_cast<double>(s), x, (alpha_s + x / bw) * (1 + noise * (2 * u - 1))});
  }
  return pts;
}

TEST(CommFitTest, RecoversExactModel) {
  const AlphaBetaFit f = fit_alpha_beta(synthetic(20e-6, 300e9, 0, 1));
  ASSERT_TRUE(f.ok) << f.reason;
  EXPECT_NEAR(f.latency_s, 20e-6, 1e-12);
  EXPECT_NEAR(f.bus_bandwidth / 300e9, 1, 1e-9);
  EXPECT_NEAR(f.r2, 1, 1e-12);
  EXPECT_LT(f.max_rel_residual, 1e-9);
  EXPECT_EQ(f.small_points, 14);  // 8 B … 64 KiB
  EXPECT_EQ(f.large_points, 14);  // 1 MiB … 8 GiB
  EXPECT_EQ(f.method, "ols_large+median_small");
}

TEST(CommFitTest, RecoversModelUnderTwoPercentNoise) {
  const AlphaBetaFit f = fit_alpha_beta(synthetic(20e-6, 300e9, 0.02, 42));
  ASSERT_TRUE(f.ok) << f.reason;
  EXPECT_NEAR(f.latency_s, 20e-6, 0.02 * 20e-6);
  EXPECT_NEAR(f.bus_bandwidth / 300e9, 1, 0.01);
  EXPECT_GT(f.r2, 0.999);
  EXPECT_LT(f.max_rel_residual, 0.05);
}

TEST(CommFitTest, LargeSizesOnlyUseTheIntercept) {
  std::vector<SeriesPoint> pts;
  for (double s : {1 << 20, 1 << 22, 1 << 24}) pts.push_back({s, s, 10e-6 + s / 50e9});
  const AlphaBetaFit f = fit_alpha_beta(pts);
  ASSERT_TRUE(f.ok);
  EXPECT_NEAR(f.latency_s, 10e-6, 1e-12);
  EXPECT_NEAR(f.bus_bandwidth, 50e9, 1e-3);
  EXPECT_EQ(f.method, "ols_large+intercept");
}

TEST(CommFitTest, SmallSweepFallsBackToUpperHalf) {
  // Nothing ≥ 1 MiB: bandwidth from the larger half (4 KiB, 8 KiB), latency from all ≤ 64 KiB.
  std::vector<SeriesPoint> pts;
  for (double s : {1024.0, 2048.0, 4096.0, 8192.0}) pts.push_back({s, s, 5e-6 + s / 1e9});
  const AlphaBetaFit f = fit_alpha_beta(pts);
  ASSERT_TRUE(f.ok);
  EXPECT_EQ(f.method, "ols_upper_half+median_small");
  EXPECT_EQ(f.large_points, 2);
  EXPECT_NEAR(f.latency_s, 5e-6, 1e-12);
  EXPECT_NEAR(f.bus_bandwidth, 1e9, 1e-3);
}

TEST(CommFitTest, ReportsWhyItCannotFit) {
  EXPECT_EQ(fit_alpha_beta({{1024, 1024, 1e-5}}).reason, "needs at least 2 sizes with positive time");
  EXPECT_EQ(fit_alpha_beta({{1 << 20, 1 << 20, 2e-5}, {1 << 21, 1 << 21, 1e-5}}).reason,
            "time does not grow with size in the bandwidth regime");
  EXPECT_EQ(fit_alpha_beta({{1 << 20, 1 << 20, 2e-5}, {1 << 20, 1 << 20, 3e-5}}).reason,
            "the bandwidth regime has a single size");
}

}  // namespace
}  // namespace comm_bench
