// Statistics and efficiency math with hand-computed values.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "efficiency.h"
#include "stats.h"

namespace trainsim::kb {
namespace {

TEST(KernelsStatsTest, MedianQuantilesAndSpread) {
  SampleStats s = summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(s.n, 5);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.p10, 1.4);  // position 0.1*4 = 0.4 between 1 and 2
  EXPECT_DOUBLE_EQ(s.p90, 4.6);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.rel_stdev, std::sqrt(2.5) / 3);  // sample variance 10/4
  EXPECT_DOUBLE_EQ(summarize({1, 2, 3, 4}).median, 2.5);
  EXPECT_DOUBLE_EQ(summarize({7}).rel_stdev, 0);
  EXPECT_THROW((void)summarize({}), Error);
}

TEST(KernelsEfficiencyTest, ComputeAndMemory) {
  // 206158430208 FLOP in 0.3 ms at 989 TFLOP/s peak.
  EXPECT_DOUBLE_EQ(compute_efficiency(206158430208.0, 3e-4, 989e12), 206158430208.0 / (3e-4 * 989e12));
  EXPECT_NEAR(compute_efficiency(206158430208.0, 3e-4, 989e12), 0.694838, 1e-6);
  // 2 GiB in 0.8 ms minus one 10 us launch at 3.35 TB/s: 2147483648 / (3.35e12 * 7.9e-4) = 0.811443.
  auto eff = memory_efficiency(2147483648.0, 8e-4, 3.35e12, 10e-6, 1);
  ASSERT_TRUE(eff.has_value());
  EXPECT_NEAR(*eff, 0.811443, 1e-6);
  EXPECT_FALSE(memory_efficiency(1e6, 15e-6, 3.35e12, 10e-6, 2).has_value());
}

TEST(KernelsEfficiencyTest, Peaks) {
  Peaks h100 = device_peaks("NVIDIA H100 80GB HBM3", 9, 0, 132, 1.98e9);
  EXPECT_DOUBLE_EQ(h100.bf16, 989e12);
  EXPECT_DOUBLE_EQ(h100.fp8, 1979e12);
  EXPECT_DOUBLE_EQ(device_peaks("NVIDIA H100 PCIe", 9, 0, 114, 1.755e9).bf16, 756e12);
  // Unknown Hopper part: 4096 FLOP/clk/SM x 132 SMs x 1.83 GHz.
  Peaks other = device_peaks("Some GPU", 9, 0, 132, 1.83e9);
  EXPECT_DOUBLE_EQ(other.bf16, 4096.0 * 132 * 1.83e9);
  EXPECT_DOUBLE_EQ(other.fp8, 2 * 4096.0 * 132 * 1.83e9);
  EXPECT_EQ(other.source, "132 SMs x 1830 MHz x 4096 FLOP/clk/SM");
}

}  // namespace
}  // namespace trainsim::kb
