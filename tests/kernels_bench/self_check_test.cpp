// Timing sanity verdicts and the report format.
#include <gtest/gtest.h>

#include "self_check.h"

namespace trainsim::kb {
namespace {

TEST(KbSelfCheckTest, EfficiencyAboveOneAndNonMonotoneSeriesFail) {
  // 1 TFLOP in 2 ms on a 1000 TFLOP/s peak = 0.5; 4 TFLOP in 3 ms = 1.33 (impossible).
  std::vector<TimedPoint> pts = {{"gemm", "small", 1e12, 2e-3, 1e15}, {"gemm", "big", 4e12, 3e-3, 1e15}};
  std::vector<CheckLine> c = timing_checks(pts);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_TRUE(c[0].ok);
  EXPECT_EQ(c[0].detail, "0.002 s, efficiency 0.500 of the device peak");
  EXPECT_FALSE(c[1].ok);
  EXPECT_EQ(c[1].detail, "0.003 s, efficiency 1.333 of the device peak (above 1: the timer or the peak is wrong)");
  EXPECT_TRUE(c[2].ok);  // 3 ms after 2 ms: monotone
  // A bigger copy 10 % faster than a smaller one.
  std::vector<CheckLine> m = timing_checks({{"copy", "64M", 1e8, 1e-4, 3e12}, {"copy", "128M", 2e8, 0.9e-4, 3e12}});
  EXPECT_FALSE(m[2].ok);
  EXPECT_EQ(m[2].detail, "128M (9e-05 s) is faster than the smaller 64M (0.0001 s) beyond 5 %");
  EXPECT_FALSE(all_passed(m));
}

TEST(KbSelfCheckTest, ReportCountsPassesAndFailures) {
  std::string r = format_checks({{"gemm bf16", true, "max abs err 0"}, {"sdpa fwd", false, "worst at [3]"}});
  EXPECT_EQ(r, "PASS gemm bf16: max abs err 0\nFAIL sdpa fwd: worst at [3]\nself-check: 1 passed, 1 failed\n");
}

}  // namespace
}  // namespace trainsim::kb
