// Efficiency model over scattered measured shapes: the per-shape entries a calibration measured
// (e.g. SimuMax's system files: GEMMs, grouped GEMMs and fused attention of the plans it swept),
// evaluated for any shape of the same family at estimate time (docs/calibration.md, "Models from
// measured entries").
//
// A point is a shape key and its measured efficiency against the op class's peak. The shapes do
// not lie on a grid, so the model works on their features in log space:
// - GEMM (key kind Matmul): rows b·m, columns n, reduction k; class: layout, out dtype,
//   accumulate (the data-gradient and fp32-accumulating weight-gradient kernels are timed apart);
// - grouped GEMM (Grouped): tokens per expert M, experts per rank ng, N, K; class: stage, and for
//   the weight gradient the main-grad dtype (the forward and data gradient do not read it);
// - attention (Sdpa): batch·heads, sequence, d_qk, d_v, GQA ratio heads / KV heads; class: the
//   qkv layout (contiguous or strided).
//
// Answer for a key: a point of the same features and class: its efficiency (measured; several:
// their geometric mean); otherwise the inverse-square-distance weighted mean of log efficiency of
// the kPointNeighbours nearest points of the class (every point when the class has none),
// labelled extrapolated when a feature lies outside the range the class's points span, else
// interpolated. Attention with at least kAttentionStructurePoints points at
// kAttentionStructureSeqs sequence lengths: the kernel's time structure
// (compute/attention_model.h) is fitted to every point of the model and the nearest points
// average their log residuals to it, added to its log efficiency at the key. The measurements carry the ~10 % scatter of repeat timings (docs), which a
// smoother would only average the same way.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compute/attention_model.h"
#include "compute/gemm_model.h"
#include "calibration/shape_key.h"

namespace trainsim {

/// Neighbours averaged, and the power of the inverse distance that weights them: held-out mean
/// error over SimuMax's B200 and A100-PCIe entries (docs/calibration.md) was lowest at 4 and 2
/// among 1/1, 4/2, 8/2, 8/3 and 16/2 (apart from B200 grouped GEMM and A100 GEMM, 8 and 2 by
/// 0.1–2 points).
inline constexpr int kPointNeighbours = 4;
inline constexpr double kPointDistancePower = 2;
/// A measured efficiency's range: that of accurate_efficient_factor in a system file (10^-6 to
/// 100); a 1e300 point gave infinite held-out errors and a structure fit of zeros.
inline constexpr double kPointMinEfficiency = 1e-6;
inline constexpr double kPointMaxEfficiency = 100;

/// Features of a key in log space and its class (see above); n = 0 for a key of no family.
struct PointFeatures {
  double x[5] = {};
  int n = 0;
  uint32_t cls = 0;
};
[[nodiscard]] PointFeatures point_features(const PackedKey& key);

/// "GEMM", "grouped GEMM", "attention" (KeyKind Matmul, Grouped, Sdpa), "" otherwise.
[[nodiscard]] const char* point_family_name(KeyKind kind);

struct EfficiencyAnswer {
  double efficiency = 0;  // 0 when source is Default
  EfficiencySource source = EfficiencySource::Default;
};

class PointModel {
 public:
  PointModel() = default;
  /// Points of one key kind (Matmul, Grouped or Sdpa), efficiency > 0 and finite each. Throws
  /// std::invalid_argument naming the point otherwise.
  PointModel(KeyKind kind, std::vector<std::pair<PackedKey, double>> points);

  [[nodiscard]] KeyKind kind() const { return kind_; }
  [[nodiscard]] size_t points() const { return keys_.size(); }
  [[nodiscard]] bool empty() const { return keys_.empty(); }
  /// The measured points as (key, efficiency), in the order given.
  [[nodiscard]] std::vector<std::pair<PackedKey, double>> entries() const;

  /// The efficiency of `key` and how it was obtained (Default for a key of another kind).
  [[nodiscard]] EfficiencyAnswer predict(const PackedKey& key) const;

  /// Leave-one-out: every point predicted without the points of its features and class.
  struct HeldOut {
    PackedKey key;
    double measured = 0, predicted = 0;  // efficiencies; predicted 0: nothing to go by
  };
  [[nodiscard]] std::vector<HeldOut> leave_one_out() const;

  /// The fitted attention structure (not fitted: another kind, or too few points).
  [[nodiscard]] const AttentionFit& structure() const { return structure_; }

  /// FNV-1a over the points and the provenance.
  [[nodiscard]] uint64_t content_hash() const;

  /// Free-text provenance (JSON object text) as written in the system file.
  std::string provenance_json;

 private:
  // `skip`: index of a point whose features and class are left out (leave-one-out), or -1;
  // `base`: the structure's log efficiency at the query (0 without one).
  [[nodiscard]] EfficiencyAnswer predict_features(const PointFeatures& f, const PackedKey* key, long skip,
                                                  double base) const;
  // The structure's log efficiency at `key` (0 when not fitted).
  [[nodiscard]] double base_log_efficiency(const PackedKey& key) const;

  // The points of one class: order_[begin, end), and the range of each feature.
  struct Class {
    uint32_t cls = 0;
    size_t begin = 0, end = 0;
    double lo[5] = {}, hi[5] = {};
  };
  // Scans order_[begin, end) for the nearest points; `skip_same`: leave out the points of the
  // query's features and class. Returns false when it found none.
  bool nearest(const PointFeatures& f, size_t begin, size_t end, bool skip_same, double base, EfficiencyAnswer& out,
               bool& measured) const;

  KeyKind kind_ = KeyKind::None;
  std::vector<PackedKey> keys_;
  std::vector<PointFeatures> features_;
  std::vector<double> eff_, log_eff_;  // as given (written back exactly), and its log
  std::vector<double> resid_;          // log_eff_ less the structure's (log_eff_ without one)
  AttentionFit structure_;
  std::vector<size_t> order_;          // point indices by class
  std::vector<Class> classes_;
  std::unordered_map<PackedKey, size_t, PackedKeyHash> exact_;  // key → its point
};

}  // namespace trainsim
