// Screen of measured grouped-GEMM series (compute/grouped_screen.h) on synthetic series with
// hand-computed throughputs.
#include "compute/grouped_screen.h"

#include <gtest/gtest.h>

#include <vector>

namespace trainsim {
namespace {

// One expert (E = 1); pair FLOPs 6·tokens·h·I. At 1,000 tokens:
//   A h 1000 I 100: 6e8 FLOP in 6 µs     = 1.0e14 FLOP/s
//   C h 2000 I 100: 1.2e9 FLOP in 10 µs  = 1.2e14 FLOP/s (larger than A, faster: kept)
//   B h 2000 I 200: 2.4e9 FLOP in 48 µs  = 5.0e13 FLOP/s (larger than A and C: C is 2.4x faster)
//   D h 4000 I 400: only 128 tokens, below the 256 compared from (kept whatever its time)
//   F two experts, h 4000 I 400: no smaller shape of two experts (kept)
std::vector<GroupedSeries> synthetic() {
  return {
      {1, 1000, 100, {256, 1000}, {2e-6, 6e-6}},
      {1, 2000, 200, {256, 1000, 4000}, {1e-5, 4.8e-5, 2e-4}},
      {1, 2000, 100, {1000}, {1e-5}},
      {1, 4000, 400, {128}, {1.0}},
      {2, 4000, 400, {1000}, {1.0}},
  };
}

TEST(GroupedScreenTest, SetsAsideASeriesSlowerThanASmallerShapeByMoreThanTheRatio) {
  const std::vector<ScreenedSeries> out = screen_grouped_series(synthetic());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].index, 1u);
  EXPECT_EQ(out[0].smaller, 2u);  // C (2.4x) rather than A (2.0x)
  EXPECT_EQ(out[0].tokens, 1000);  // the largest count both measured
  EXPECT_NEAR(out[0].ratio, 2.4, 1e-12);
}

TEST(GroupedScreenTest, KeepsASeriesWithinTheRatio) {
  std::vector<GroupedSeries> s = synthetic();
  // B at 1,000 tokens in 35 µs: 6.857e13 FLOP/s; C is 1.75x faster (over 1.5), A 1.458x.
  s[1].time_s[1] = 3.5e-5;
  std::vector<ScreenedSeries> out = screen_grouped_series(s);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NEAR(out[0].ratio, 1.2e14 / (2.4e9 / 3.5e-5), 1e-12);
  // In 28 µs: 8.571e13 FLOP/s, C 1.4x faster: kept.
  s[1].time_s[1] = 2.8e-5;
  EXPECT_TRUE(screen_grouped_series(s).empty());
}

}  // namespace
}  // namespace trainsim
