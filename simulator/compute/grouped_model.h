// Grouped-GEMM efficiency model: measured times of the MoE expert GEMMs of one rank, E local
// experts with M tokens each, evaluated for any (M, E, n, k) at estimate time
// (docs/calibration.md, "Grouped-GEMM model").
//
// The measurements are fused MoE kernels (tools/measured: TensorRT-LLM's cutlass MoE of
// aiconfigurator-core's tables): a series holds one expert shape, E experts of hidden size h and
// (per-rank) intermediate size I, timed at several tokens per expert. Each timing covers the
// gated up projection (n = 2I, k = h) and the down projection (n = h, k = I), 6·M·E·h·I FLOPs;
// both GEMMs are given the pair's efficiency.
//
// Answer for a GEMM of M tokens per expert, E experts, n × k weights per expert:
// - the series whose E and one of whose two GEMMs equal the query's (several: the mean of their
//   answers); otherwise a local linear fit across the other series (a shape the table lacks):
//   each series' answer at M stands at both of its GEMMs in (log E, log n, log k), and
//   y = c0 + slopes · (offset from the query) is fitted by least squares with Gaussian weights
//   in the distance (kGroupedBandwidth) and a ridge on the slopes (kGroupedRidge); the fit is
//   made robust by Cleveland's bisquare iterations (LOWESS, J. Am. Stat. Assoc. 74, 1979), which
//   set aside series far off the trend of their neighbours (the tables hold expert shapes timed
//   several times slower than both their neighbours, a kernel choice no shape trend predicts);
//   c0 is the answer;
// - along a series, y = log(seconds per FLOP) linear in log M between the measured M;
// - below the smallest measured M the time is held (the weights are read whatever the rows: the
//   memory-bound floor), above the largest the time per FLOP is held (the largest throughput);
// - the source: measured (a series of the query's shape at a measured M), interpolated (inside
//   the measured M range — for a fit across series, that of the nearest one — and inside the
//   span of the series' E, n and k),
//   else extrapolated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compute/gemm_model.h"

namespace trainsim {

/// A shape the table lacks: the width (log units) of the Gaussian weights of the other series in
/// (log E, log n, log k), the ridge on the fitted slopes, and the robustness iterations. Chosen
/// on whole tables, each expert shape held out in turn (docs/calibration.md): H100 bf16 / fp8,
/// GB200 bf16, B200 fp8 mean 17.95 / 15.99 / 8.69 / 12.48 % at 0.75, 0.1, 2; 19.80 / 14.04 /
/// 9.01 / 13.07 % at width 0.5; 16.78 / 16.94 / 10.45 / 15.06 % with ridge 1; without the
/// robustness iterations 22.83 / 16.05 / 10.37 / 14.31 %; the 4 nearest series (before) 29.24 /
/// 17.55 / 12.17 / 19.80 %.
inline constexpr double kGroupedBandwidth = 0.75;
inline constexpr double kGroupedRidge = 0.1;
inline constexpr int kGroupedRobustIterations = 2;

/// One measured expert shape: E experts of hidden h and intermediate I (per rank), the gated
/// pair's time at each tokens-per-expert value.
struct GroupedSeries {
  double experts = 0, hidden = 0, inter = 0;
  std::vector<double> tokens, time_s;  // tokens per expert (increasing), seconds
};

struct GroupedAnswer {
  double s_per_flop = 0;  // 0 when source is Default
  EfficiencySource source = EfficiencySource::Default;
};

class GroupedModel {
 public:
  GroupedModel() = default;
  /// Series with positive finite values, tokens and times of equal length. Series of the same
  /// (E, h, I) are merged (a token count timed twice: the geometric mean). Throws
  /// std::invalid_argument naming the series otherwise.
  explicit GroupedModel(std::vector<GroupedSeries> series);

  [[nodiscard]] bool empty() const { return series_.empty(); }
  [[nodiscard]] size_t points() const { return points_; }
  [[nodiscard]] const std::vector<GroupedSeries>& series() const { return series_; }

  /// Seconds per FLOP of an M × k · k × n GEMM on each of E experts, and how it was obtained.
  [[nodiscard]] GroupedAnswer predict(double m, double experts, double n, double k) const;

  /// Leave-one-out: every measured point predicted without it (`series_out` false: its series
  /// keeps its other points) or without its whole series (true: an expert shape not measured).
  struct HeldOut {
    double experts, hidden, inter, tokens, measured_s, predicted_s;  // pair times; predicted 0: none
  };
  [[nodiscard]] std::vector<HeldOut> leave_one_out(bool series_out) const;

  /// FNV-1a over the series and the provenance (a system's fingerprint).
  [[nodiscard]] uint64_t content_hash() const;

  /// Free-text provenance (JSON object text) as written in the system file.
  std::string provenance_json;

 private:
  // y of series s at m (log seconds per FLOP), without point `skip` of it (-1: none); false when
  // the series has no point left. `inside` is cleared when m lies outside its measured range.
  bool series_y(size_t s, double m, long skip, double& y, bool& measured, bool& inside) const;
  // One series' answer at one of its GEMMs: offsets from the query, y, inside its M range.
  struct Sample {
    double de, dn, dk, y;
    bool inside;
  };
  // The robust local linear fit's value at the query; false when it cannot be solved.
  static bool local_fit(const std::vector<Sample>& samples, double& y);
  [[nodiscard]] GroupedAnswer predict_skip(double m, double experts, double n, double k, long skip_series,
                                           long skip_point) const;

  std::vector<GroupedSeries> series_;
  // Per series: log E, log of the up projection's (n, k) = (2I, h) and the down's (h, I).
  struct Features {
    double e, up_n, up_k, down_n, down_k;
  };
  std::vector<Features> features_;
  double lo_[3] = {}, hi_[3] = {};  // span of log E, log n, log k over the series' GEMMs
  size_t points_ = 0;
};

/// FLOPs of one timed pair (gated up and down projection): 6·M·E·h·I.
[[nodiscard]] inline double grouped_pair_flops(double tokens, double experts, double hidden, double inter) {
  return 6 * tokens * experts * hidden * inter;
}

}  // namespace trainsim
