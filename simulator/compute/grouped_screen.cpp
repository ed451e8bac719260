// Screen of measured grouped-GEMM series (see grouped_screen.h).
#include "compute/grouped_screen.h"

#include <algorithm>

namespace trainsim {
namespace {

// Time of `s` at exactly `tokens`, 0 when not measured there.
double time_at(const GroupedSeries& s, double tokens) {
  for (size_t i = 0; i < s.tokens.size() && i < s.time_s.size(); ++i)
    if (s.tokens[i] == tokens) return s.time_s[i];
  return 0;
}

}  // namespace

std::vector<ScreenedSeries> screen_grouped_series(const std::vector<GroupedSeries>& series) {
  std::vector<ScreenedSeries> out;
  for (size_t i = 0; i < series.size(); ++i) {
    const GroupedSeries& s = series[i];
    ScreenedSeries worst{i, 0, 0, 0};
    for (size_t j = 0; j < series.size(); ++j) {
      const GroupedSeries& o = series[j];
      if (j == i || o.experts != s.experts || o.hidden > s.hidden || o.inter > s.inter) continue;
      if (o.hidden == s.hidden && o.inter == s.inter) continue;
      double m = 0;
      for (const double t : s.tokens)
        if (t >= kGroupedScreenMinTokens && t > m && time_at(o, t) > 0) m = t;
      if (m == 0) continue;
      const double ts = time_at(s, m), to = time_at(o, m);
      if (!(ts > 0)) continue;
      // Throughput ratio, smaller shape over this one: (flops_o / t_o) / (flops_s / t_s).
      const double ratio = grouped_pair_flops(m, o.experts, o.hidden, o.inter) / to /
                           (grouped_pair_flops(m, s.experts, s.hidden, s.inter) / ts);
      if (ratio > worst.ratio) worst = {i, j, m, ratio};
    }
    if (worst.ratio > kGroupedScreenRatio) out.push_back(worst);
  }
  return out;
}

}  // namespace trainsim
