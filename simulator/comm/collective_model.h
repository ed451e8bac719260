// Size-dependent collective model: measured times of one collective on one network group, per
// group size a curve over message size, evaluated at estimate time (docs/calibration.md,
// "Collective models").
//
// What the measured curve shows is NCCL's tuner (src/graph/tuning.cc): it predicts each
// (algorithm, protocol) as latency + bytes / bandwidth and runs the fastest, LL (lowest latency,
// half the bandwidth: 8-byte stores carrying 4 bytes of data), LL128 (120 of every 128 bytes
// data) and Simple (full bandwidth, the highest latency), and it adds channels as messages grow.
// Time over size is a chain of lines with rising latency and falling time per byte: each
// candidate's time rises with the size, so their minimum, what NCCL runs, never falls. A measured
// time above that of a larger size is a timing glitch (a late launch or a preempted rank: it only
// ever adds time): the model works on the monotone envelope, each time replaced by the least
// time of its and every larger size (nccl-tests tables show such points, e.g. an H100 all-to-all
// of 8 ranks at 2 KiB slower than at 64 KiB). Per group size the model fits:
// - the α–β line t = α + x·β in the bus bytes x = size·scale·(n+offset)/n (α the latency floor,
//   1/β the saturated bus bandwidth), least squares on the relative error with α, β ≥ 0;
// - the protocol regimes: up to kCollectiveRegimes contiguous runs of sorted sizes, a line each
//   (same fit), the split with the smallest relative squared error (at least
//   kCollectiveRegimePoints sizes per regime), switching where two lines cross between their
//   runs (else at the geometric mean of the runs' neighbouring sizes). They describe the curve
//   (`system evaluate` prints them); as the base of the interpolation they held out worse than
//   the single line (docs/calibration.md: a held-out size moves the switches);
// - the envelope's residuals log(t / line) interpolated linearly in log size: a measured size
//   is answered by its envelope time (measured: its own time unless a larger size ran faster), one between two measured sizes by the line corrected by
//   its neighbours (interpolated: the switches and channel steps are in the residuals), one
//   beyond them by the line with the residual of the nearest end (extrapolated: below, the
//   latency floor; above, the saturated bandwidth).
// A group size between two measured ones: log time interpolated in log n between the two curves
// at equal bus bytes; beyond: the nearest curve at equal bus bytes (extrapolated).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compute/gemm_model.h"  // EfficiencySource

namespace trainsim {

/// Regimes of a curve: NCCL's three protocols (LL, LL128, Simple).
inline constexpr int kCollectiveRegimes = 3;
/// Fewest measured sizes a regime is fitted from (two would pass through them exactly).
inline constexpr int kCollectiveRegimePoints = 3;

/// One measured collective: group size, message size in bytes (the nccl-tests size), seconds.
struct CollectivePoint {
  int64_t n = 0;
  double bytes = 0, time_s = 0;
};

struct CollectiveAnswer {
  double time_s = 0;  // 0 when source is Default (no measured point)
  EfficiencySource source = EfficiencySource::Default;
};

/// One group size: the regimes fitted to its points and the points' residuals.
class CollectiveCurve {
 public:
  struct Regime {
    double alpha_s = 0, beta_s_per_byte = 0;  // t = α + x·β, x bus bytes
    double upto_bytes = 0;                    // message size where the next regime takes over
  };
  /// `bus` = scale·(n+offset)/n; points sorted by size or not, sizes distinct.
  CollectiveCurve(int64_t n, double bus, std::vector<double> bytes, std::vector<double> time_s);

  [[nodiscard]] int64_t n() const { return n_; }
  [[nodiscard]] double bus() const { return bus_; }
  [[nodiscard]] const std::vector<double>& bytes() const { return bytes_; }
  /// The times as measured (written back to the system file).
  [[nodiscard]] const std::vector<double>& times() const { return t_; }
  /// The monotone envelope that is fitted and answered: min over the times of this and every
  /// larger size.
  [[nodiscard]] const std::vector<double>& envelope() const { return te_; }
  [[nodiscard]] const std::vector<Regime>& regimes() const { return regimes_; }
  /// The α–β line (α, β; upto_bytes infinite).
  [[nodiscard]] const Regime& base() const { return base_; }
  /// The α–β line at `bytes`.
  [[nodiscard]] double line(double bytes) const;
  /// The regimes' chain at `bytes` (0 without points).
  [[nodiscard]] double chain(double bytes) const;
  [[nodiscard]] CollectiveAnswer predict(double bytes) const;

 private:
  void fit();
  int64_t n_;
  double bus_;
  // Sorted sizes, times as measured, their monotone envelope (what is fitted and answered), log
  // sizes, residuals of the envelope to the line.
  std::vector<double> bytes_, t_, te_, lb_, r_;
  std::vector<Regime> regimes_;
  Regime base_;
};

/// One collective on one network group: a curve per measured group size.
class CollectiveModel {
 public:
  CollectiveModel() = default;
  /// `scale`, `offset`: the collective's bus factor scale·(n+offset)/n (all-reduce 2, −1).
  /// Throws std::invalid_argument for n < 2, a non-positive or non-finite size or time, or a
  /// size measured twice for one n, naming the point.
  CollectiveModel(double scale, double offset, std::vector<CollectivePoint> points);
  /// What the constructor rejects in one point ("the size must be at most 2^50 bytes (1 PiB)"),
  /// or nullptr: for readers that name the point by their own path.
  [[nodiscard]] static const char* point_problem(const CollectivePoint& p);

  [[nodiscard]] bool empty() const { return curves_.empty(); }
  [[nodiscard]] size_t points() const { return points_; }
  [[nodiscard]] double scale() const { return scale_; }
  [[nodiscard]] double offset() const { return offset_; }
  [[nodiscard]] const std::vector<CollectiveCurve>& curves() const { return curves_; }
  [[nodiscard]] double bus(int64_t n) const;

  /// Time of a collective of `bytes` over `n` ranks and how it was obtained.
  [[nodiscard]] CollectiveAnswer predict(double bytes, int64_t n) const;

  /// Leave-one-out: every point predicted by its group size's curve refitted without it.
  struct HeldOut {
    int64_t n;
    double bytes, measured_s, predicted_s;
  };
  [[nodiscard]] std::vector<HeldOut> leave_one_out() const;

  /// Free-text provenance (JSON object text) as written in the system file.
  std::string provenance_json;

 private:
  double scale_ = 1, offset_ = 0;
  std::vector<CollectiveCurve> curves_;  // by n
  size_t points_ = 0;
};

}  // namespace trainsim
