// Verdicts of `kernels_bench --self-check`: numerics against the CPU references and sanity of
// timings (an efficiency above 1 of the device peak, or a bigger problem that runs faster
// than a smaller one, means the timer, the peak or the kernel is wrong).
#pragma once

#include <string>
#include <vector>

namespace trainsim::kb {

struct CheckLine {
  std::string name;  // e.g. "gemm bf16 TN m=256 n=128 k=64"
  bool ok = true;
  std::string detail;
};

/// One timed problem of a size series: `work` is FLOP or bytes, `peak` per second.
struct TimedPoint {
  std::string series;  // points of one series must take longer as work grows
  std::string name;
  double work = 0, time_s = 0, peak = 0;
};

/// Checks every point (efficiency = work / (time_s * peak) must be in (0, 1]) and every series
/// sorted by work (time may not drop by more than `tolerance` from one point to the next).
[[nodiscard]] std::vector<CheckLine> timing_checks(const std::vector<TimedPoint>& points, double tolerance = 0.05);

/// "PASS name: detail" / "FAIL name: detail" lines and a closing
/// "self-check: N passed, M failed" line.
[[nodiscard]] std::string format_checks(const std::vector<CheckLine>& lines);

/// True when every line passed.
[[nodiscard]] bool all_passed(const std::vector<CheckLine>& lines);

}  // namespace trainsim::kb
