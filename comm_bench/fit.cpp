// α–β fit.
#include "fit.h"

#include <algorithm>
#include <cmath>

#include "collectives.h"

namespace comm_bench {

AlphaBetaFit fit_alpha_beta(std::vector<SeriesPoint> pts, const FitOptions& opt) {
  AlphaBetaFit f;
  std::erase_if(pts, [](const SeriesPoint& p) { return !(p.time_s > 0) || !(p.x_bytes > 0); });
  std::sort(pts.begin(), pts.end(), [](const auto& a, const auto& b) { return a.size_bytes < b.size_bytes; });
  if (pts.size() < 2) {
    f.reason = "needs at least 2 sizes with positive time";
    return f;
  }
  std::vector<SeriesPoint> large, small;
  for (const auto& p : pts) {
    if (p.size_bytes >= opt.large_min_bytes) large.push_back(p);
    if (p.size_bytes <= opt.small_max_bytes) small.push_back(p);
  }
  f.method = "ols_large+median_small";
  if (large.size() < 2) {
    large.assign(pts.begin() + static_cast<std::ptrdiff_t>(pts.size() / 2), pts.end());
    f.method = "ols_upper_half+median_small";
  }
  // Ordinary least squares y = a·x + b.
  const double m = static_cast<double>(large.size());
  double sx = 0, sy = 0;
  for (const auto& p : large) {
    sx += p.x_bytes;
    sy += p.time_s;
  }
  const double mx = sx / m, my = sy / m;
  double sxx = 0, sxy = 0, syy = 0;
  for (const auto& p : large) {
    sxx += (p.x_bytes - mx) * (p.x_bytes - mx);
    sxy += (p.x_bytes - mx) * (p.time_s - my);
    syy += (p.time_s - my) * (p.time_s - my);
  }
  if (sxx <= 0) {
    f.reason = "the bandwidth regime has a single size";
    return f;
  }
  const double a = sxy / sxx;
  const double b = my - a * mx;
  if (!(a > 0)) {
    f.reason = "time does not grow with size in the bandwidth regime";
    return f;
  }
  f.bus_bandwidth = 1 / a;
  double ss_res = 0;
  for (const auto& p : large) ss_res += std::pow(p.time_s - (a * p.x_bytes + b), 2);
  f.r2 = syy > 0 ? 1 - ss_res / syy : 1;

  if (small.empty()) {
    f.latency_s = b;
    f.method = f.method.substr(0, f.method.find('+')) + "+intercept";
  } else {
    std::vector<double> rest;
    for (const auto& p : small) rest.push_back(p.time_s - p.x_bytes * a);
    f.latency_s = median(rest);
  }
  f.latency_s = std::max(0.0, f.latency_s);
  f.small_points = static_cast<int>(small.size());
  f.large_points = static_cast<int>(large.size());
  // Residuals over every point the fit used.
  auto rel = [&](const SeriesPoint& p) {
    return std::fabs(f.latency_s + p.x_bytes * a - p.time_s) / p.time_s;
  };
  for (const auto& p : large) f.max_rel_residual = std::max(f.max_rel_residual, rel(p));
  for (const auto& p : small) f.max_rel_residual = std::max(f.max_rel_residual, rel(p));
  f.ok = true;
  return f;
}

}  // namespace comm_bench
