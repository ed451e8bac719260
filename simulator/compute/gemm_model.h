// GEMM efficiency model: measured times of y[m,n] = x[m,k]·W[n,k]ᵀ on a grid of (m, n, k),
// evaluated for any shape at estimate time (docs/calibration.md, "Efficiency models").
//
// Answer for a shape (m = rows, b·m of a shape key):
// - a measured grid node: its time;
// - otherwise y = log(t / (m·n·k)), the log of the inverse throughput, interpolated trilinearly
//   in (log m, log n, log k) over the enclosing grid cell (rows are not padded to a tile: padding
//   to 32 gave 3.09 % held-out mean on H100 bf16 against 2.75 % unpadded, the small-m rows'
//   kernels not being 32-row tiles; docs/calibration.md);
//   m is interpolated on its own series (multiples of kGemmMAlign, or the others: the published
//   tables time every m and m+1, a partial tile costing like the m+1 rows);
// - a cell corner without a measurement: y from its nearest measured neighbours along each
//   axis, log-linear between the two sides, the axes weighted by 1 / (log span · (miss + floor)):
//   the closer the neighbours, the more they count, and the straighter the axis, the more it
//   counts. `miss` is how far the line across the gap misses each neighbour when drawn from the
//   next measured node beyond the other (the mean of the two sides): the library's kernel choice
//   (tile shape, waves of tiles over the SMs, split-k) jumps along m and n and is steady along k
//   for one (m, n), so the axis whose line holds is the one to follow (docs/calibration.md);
// - beyond the grid: y held at the nearest edge (throughput of the largest or smallest measured
//   shape), reported as extrapolated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainsim {

/// How a kernel's efficiency was obtained (Measured to Extrapolated: ever less direct).
enum class EfficiencySource : uint8_t { Default, Measured, Interpolated, Extrapolated };

/// "default", "measured", "interpolated", "extrapolated".
[[nodiscard]] const char* efficiency_source_name(EfficiencySource s);
/// The label of an op's efficiency in breakdowns and traces: "fallback" when some kernel took
/// the op default, else how the least direct one was obtained.
[[nodiscard]] inline const char* efficiency_label(bool measured, EfficiencySource s) {
  return measured ? efficiency_source_name(s) : "fallback";
}

/// Filling a hole, an axis' weight is 1 / (log span · (miss + kGemmAxisMissFloor)), miss in log
/// time (above): the floor keeps an axis whose neighbours happen to line up from taking all the
/// weight. Held-out mean on the A100 bf16 table (rows unpadded): 3.88 % at 0.005, 3.95 % at 0.01,
/// 4.06 % at 0.02 (docs/calibration.md).
inline constexpr double kGemmAxisMissFloor = 0.005;
/// The miss taken for an axis with no measured node beyond either neighbour (5 %, the tables'
/// p90 repeat difference): such an axis counts, but less than one whose line is seen to hold.
inline constexpr double kGemmAxisMissUnknown = 0.05;
/// m that is a multiple of this (or below it) is interpolated on the aligned series.
inline constexpr double kGemmMAlign = 16;

/// Plausibility of the measured numbers of a model (GEMM, grouped-GEMM and collective models): a
/// size (m, n, k, experts, hidden, inter, tokens) at most kModelMaxSize = 2^40, a message at most
/// kModelMaxBytes = 2^50 bytes (1 PiB), a time from kModelMinTimeS = 1 ns to kModelMaxTimeS =
/// 1000 s (the system file's bound on latencies). Beyond them the logs and products of a
/// prediction overflow: a 1e300 µs node or a 1e300-row axis gave infinite held-out errors.
inline constexpr double kModelMaxSize = 1099511627776.0;      // 2^40
inline constexpr double kModelMaxBytes = 1125899906842624.0;  // 2^50
inline constexpr double kModelMinTimeS = 1e-9;
inline constexpr double kModelMaxTimeS = 1e3;

/// A grid built from points may have at most this many nodes per point (the published tables
/// fill theirs: 35,816 nodes for 35,700 points), or kGemmMinNodeLimit nodes.
inline constexpr double kGemmMaxNodesPerPoint = 64;
inline constexpr double kGemmMinNodeLimit = 1 << 16;

/// Tiles in waves over the SMs: a kernel that runs ⌈m/tile_m⌉·⌈n/tile_n⌉ output tiles, each SM
/// one at a time, takes ⌈W⌉ waves for W = tiles / sms, so its time per FLOP is ⌈W⌉/W that of a
/// whole number of waves (1 below one wave: split-k and smaller tiles fill the SMs there).
/// With waves set, the model interpolates y = log(t / (m·n·k·⌈W⌉/W)) and multiplies the factor
/// back at the query: the steps between two n or two m of the grid land where the tile count
/// crosses a multiple of the SMs. Off (sms 0) unless the system file's model names it; the
/// measured A100 preset does (108 SMs, cuBLAS's 128 × 256 Ampere tiles), Hopper's persistent
/// kernels show no such steps (docs/calibration.md).
struct GemmWaves {
  double sms = 0, tile_m = 0, tile_n = 0;
  [[nodiscard]] bool on() const { return sms > 0; }
};
/// ⌈W⌉/W for W = ⌈m/tile_m⌉·⌈n/tile_n⌉ / sms when W ≥ 1, else 1 (and 1 when waves are off).
[[nodiscard]] double gemm_wave_factor(const GemmWaves& w, double m, double n);

/// One measured GEMM: rows m, columns n, reduction k, time in seconds.
struct GemmPoint {
  double m = 0, n = 0, k = 0, time_s = 0;
};

struct GemmAnswer {
  double time_s = 0;  // 0 when source is Default (no measured point to go by)
  EfficiencySource source = EfficiencySource::Default;
};

class GemmModel {
 public:
  GemmModel() = default;
  /// The grid spanned by the points' distinct m, n and k; nodes without a point are holes.
  /// Throws std::invalid_argument for a non-positive or non-finite value, naming the point, and
  /// for a grid of more nodes than the limits above allow.
  explicit GemmModel(const std::vector<GemmPoint>& points);
  /// From axes and times in m-major, then n, then k order (time ≤ 0 or NaN: a hole).
  GemmModel(std::vector<double> m, std::vector<double> n, std::vector<double> k, std::vector<double> time_s);

  [[nodiscard]] bool empty() const { return points_ == 0; }
  [[nodiscard]] size_t points() const { return points_; }
  [[nodiscard]] const std::vector<double>& m_axis() const { return m_; }
  [[nodiscard]] const std::vector<double>& n_axis() const { return n_; }
  [[nodiscard]] const std::vector<double>& k_axis() const { return k_; }
  /// Time of node (i, j, l) in seconds, or 0 for a hole.
  [[nodiscard]] double time_at(size_t i, size_t j, size_t l) const;

  /// Turns the wave factor on (or off: sms 0) for interpolation; the measured times stay. Throws
  /// std::invalid_argument unless sms, tile_m and tile_n are all finite and > 0 (or sms is 0).
  void set_waves(const GemmWaves& w);
  [[nodiscard]] const GemmWaves& waves() const { return waves_; }

  /// The predicted time of an m × n × k GEMM and how it was obtained.
  [[nodiscard]] GemmAnswer predict(double m, double n, double k) const;

  /// Leave-one-out: every measured node predicted by the model without it.
  struct HeldOut {
    double m, n, k, measured_s, predicted_s;  // predicted_s 0: no neighbour to go by
  };
  [[nodiscard]] std::vector<HeldOut> leave_one_out() const;

  /// FNV-1a over the axes, the nodes' values and the provenance (a system's fingerprint).
  [[nodiscard]] uint64_t content_hash() const;

  /// Free-text provenance (JSON object text) as written in the system file.
  std::string provenance_json;

 private:
  [[nodiscard]] size_t at(size_t i, size_t j, size_t l) const { return (i * n_.size() + j) * k_.size() + l; }
  // y of node (i, j, l) on m series s (i indexes the series), measured or estimated from its
  // neighbours; false when it has none. `edge` is set when only one-sided neighbours were found.
  bool node_y(int s, size_t i, size_t j, size_t l, double& y, bool& edge) const;
  [[nodiscard]] GemmAnswer predict_on(int s, double m, double n, double k) const;
  void index();

  std::vector<double> m_, n_, k_;  // sorted axes
  std::vector<double> y_;          // log(t / (m·n·k·wave factor)) per node, NaN for a hole
  GemmWaves waves_;
  std::vector<double> lm_, ln_, lk_;
  // The m series: indices into m_ of the aligned and of the other rows.
  std::vector<size_t> series_[2];
  size_t points_ = 0;
};

}  // namespace trainsim
