// Sample statistics for repeated kernel timings.
#pragma once

#include <vector>

#include "calibration/kernels_file.h"

namespace trainsim::kb {

/// Median, p10/p90 (linear interpolation between order statistics, numpy's default), min, max,
/// mean and relative sample standard deviation of `samples` (seconds). Throws Error when empty.
[[nodiscard]] SampleStats summarize(std::vector<double> samples);

/// Value at quantile q in [0, 1] of sorted samples, linearly interpolated.
[[nodiscard]] double quantile_sorted(const std::vector<double>& sorted, double q);

}  // namespace trainsim::kb
