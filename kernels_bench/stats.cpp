// Sample statistics.
#include "stats.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace trainsim::kb {

double quantile_sorted(const std::vector<double>& sorted, double q) {
  TRAINSIM_ASSERT(!sorted.empty() && q >= 0 && q <= 1, "quantile of an empty sample");
  double pos = q * static_cast<double>(sorted.size() - 1);
  auto lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

SampleStats summarize(std::vector<double> samples) {
  if (samples.empty()) throw Error("no timing samples to summarize");
  std::sort(samples.begin(), samples.end());
  SampleStats s;
  s.n = static_cast<int64_t>(samples.size());
  s.median = quantile_sorted(samples, 0.5);
  s.p10 = quantile_sorted(samples, 0.1);
  s.p90 = quantile_sorted(samples, 0.9);
  s.min = samples.front();
  s.max = samples.back();
  double sum = 0;
  for (double x : samples) sum += x;
  s.mean = sum / static_cast<double>(samples.size());
  double ss = 0;
  for (double x : samples) ss += (x - s.mean) * (x - s.mean);
  double stdev = samples.size() > 1 ? std::sqrt(ss / static_cast<double>(samples.size() - 1)) : 0;
  s.rel_stdev = s.mean > 0 ? stdev / s.mean : 0;
  return s;
}

}  // namespace trainsim::kb
