// α–β fit of collective time against message size.
#pragma once

#include <string>
#include <vector>

namespace comm_bench {

/// One measured size of a (collective, group) series.
struct SeriesPoint {
  double size_bytes = 0;  // nccl-tests size
  double x_bytes = 0;     // size·scale·(n+offset)/n (model_bytes)
  double time_s = 0;
};

struct FitOptions {
  double small_max_bytes = 64 * 1024;    // latency from sizes ≤ this
  double large_min_bytes = 1024 * 1024;  // bandwidth from sizes ≥ this (SimuMax fits from 1 MiB)
};

/// t(size) = latency + x/bus_bandwidth. `ok` is false (with `reason`) when the points
/// cannot support a fit.
struct AlphaBetaFit {
  bool ok = false;
  std::string reason;
  double latency_s = 0;       // α
  double bus_bandwidth = 0;   // B, bytes/s (asymptotic busbw)
  double r2 = 0;              // of the large-message regression
  double max_rel_residual = 0;  // max |t̂ − t|/t over the points used
  int small_points = 0;
  int large_points = 0;
  std::string method;
};

/// Bandwidth: least squares t = a·x + b over sizes ≥ large_min_bytes (or the larger half of
/// the sweep when fewer than two are that large), B = 1/a — the SimuMax nccl_fit regression
/// restricted to the bandwidth regime. Latency: median of t − x/B over sizes ≤ small_max_bytes
/// (robust to protocol switches and outliers), else the intercept b; clamped at 0.
[[nodiscard]] AlphaBetaFit fit_alpha_beta(std::vector<SeriesPoint> pts, const FitOptions& opt = {});

}  // namespace comm_bench
