#include "schedule/grad_buckets.h"

#include <algorithm>
#include <cmath>

namespace trainsim {

double default_bucket_params(int64_t dp) { return std::max(40e6, 1e6 * static_cast<double>(dp)); }

std::vector<GradBucket> grad_buckets(const std::vector<GradSegment>& segs, double bucket_params) {
  double total_params = 0, total_s = 0;
  for (const auto& s : segs) {
    total_params += s.params;
    total_s += s.seconds;
  }
  std::vector<GradBucket> out;
  if (total_params <= 0) return out;
  // Time (from the start of the backward) at which the cumulative gradient count reaches `p`,
  // for rising `p`: the walk over the segments goes on from where the previous call stopped (the
  // sums before a segment are the same additions in the same order as a walk from the start).
  size_t at = 0;
  double params = 0, t = 0;  // the parameters and time of segs[0, at)
  auto time_at = [&](double p) {
    for (; at < segs.size(); ++at) {
      const GradSegment& s = segs[at];
      if (s.params > 0 && params + s.params >= p) return t + s.seconds * (p - params) / s.params;
      params += s.params;
      t += s.seconds;
    }
    return t;
  };
  const auto n = static_cast<int64_t>(std::ceil(total_params / bucket_params));
  out.reserve(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    const double end = std::min(total_params, static_cast<double>(k + 1) * bucket_params);
    const double begin = static_cast<double>(k) * bucket_params;
    // Within [0, 1] also where a segment's time is negative (a system's collective fitted below
    // zero): a bucket is ready neither before the backward starts nor after it ends.
    out.push_back({end - begin, total_s > 0 ? std::clamp(time_at(end) / total_s, 0.0, 1.0) : 1.0});
  }
  return out;
}

}  // namespace trainsim
