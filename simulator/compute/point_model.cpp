// Efficiency model over scattered measured shapes (see point_model.h for the method).
#include "compute/point_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "compute/nearest.h"
#include "core/text.h"

namespace trainsim {

PointFeatures point_features(const PackedKey& key) {
  PointFeatures f;
  const double* v = key.num;
  const auto positive = [&](int n) {
    for (int i = 0; i < n; ++i)
      if (!(f.x[i] > 0) || !std::isfinite(f.x[i])) return false;
    return true;
  };
  switch (key.kind) {
    case KeyKind::Matmul:  // b, m, k, n; layout, out dtype; accumulate
      f.x[0] = v[0] * v[1];
      f.x[1] = v[3];
      f.x[2] = v[2];
      f.n = 3;
      f.cls = key.choice[0] | (key.choice[1] << 4) | ((key.flags & 1u) << 8);
      break;
    case KeyKind::Grouped: {  // ng, M, N, K; dtype, out dtype, main-grad dtype, stage
      f.x[0] = v[1];
      f.x[1] = v[0];
      f.x[2] = v[2];
      f.x[3] = v[3];
      f.n = 4;
      const uint32_t stage = key.choice[3];
      f.cls = stage | (stage == static_cast<uint32_t>(KeyStage::bwd_grad_w) ? key.choice[2] << 4 : 0u);
      break;
    }
    case KeyKind::Sdpa:  // batch, seq, heads, KV heads, d_qk, d_v; contiguous
      f.x[0] = v[0] * v[2];
      f.x[1] = v[1];
      f.x[2] = v[4];
      f.x[3] = v[5];
      f.x[4] = v[3] > 0 ? v[2] / v[3] : 0;
      f.n = 5;
      f.cls = key.flags & 1u;
      break;
    case KeyKind::None: return f;
  }
  if (!positive(f.n)) return PointFeatures{};
  for (int i = 0; i < f.n; ++i) f.x[i] = std::log(f.x[i]);
  return f;
}

const char* point_family_name(KeyKind kind) {
  switch (kind) {
    case KeyKind::Matmul: return "GEMM";
    case KeyKind::Grouped: return "grouped GEMM";
    case KeyKind::Sdpa: return "attention";
    case KeyKind::None: break;
  }
  return "";
}

PointModel::PointModel(KeyKind kind, std::vector<std::pair<PackedKey, double>> points) : kind_(kind) {
  if (kind == KeyKind::None) throw std::invalid_argument("a measured-points model needs a key kind");
  for (const auto& [key, eff] : points) {
    const PointFeatures f = point_features(key);
    if (key.kind != kind || f.n == 0)
      throw std::invalid_argument("point '" + format_packed_key(key) + "' is not a " + point_family_name(kind) +
                                  " shape with positive dimensions");
    if (!(eff > 0) || !std::isfinite(eff))
      throw std::invalid_argument("point '" + format_packed_key(key) + "': efficiency must be finite and > 0");
    if (eff < kPointMinEfficiency || eff > kPointMaxEfficiency)
      throw std::invalid_argument("point '" + format_packed_key(key) + "': efficiency " + format_number(eff) +
                                  " is outside [" + format_number(kPointMinEfficiency) + ", " +
                                  format_number(kPointMaxEfficiency) + "] (the range of accurate_efficient_factor)");
    keys_.push_back(key);
    features_.push_back(f);
    eff_.push_back(eff);
    log_eff_.push_back(std::log(eff));
    exact_.emplace(key, keys_.size() - 1);
  }
  order_.resize(keys_.size());
  for (size_t i = 0; i < order_.size(); ++i) order_[i] = i;
  std::stable_sort(order_.begin(), order_.end(),
                   [&](size_t a, size_t b) { return features_[a].cls < features_[b].cls; });
  for (size_t at = 0; at < order_.size(); ++at) {
    const PointFeatures& p = features_[order_[at]];
    if (classes_.empty() || classes_.back().cls != p.cls) {
      classes_.push_back({p.cls, at, at, {}, {}});
      for (int d = 0; d < p.n; ++d) classes_.back().lo[d] = classes_.back().hi[d] = p.x[d];
    }
    Class& c = classes_.back();
    c.end = at + 1;
    for (int d = 0; d < p.n; ++d) {
      c.lo[d] = std::min(c.lo[d], p.x[d]);
      c.hi[d] = std::max(c.hi[d], p.x[d]);
    }
  }
  resid_ = log_eff_;
  if (kind_ == KeyKind::Sdpa) {
    std::vector<AttentionShape> shapes;
    for (const PackedKey& k : keys_) shapes.push_back(attention_shape(k));
    structure_ = fit_attention(shapes, eff_);
    if (structure_.fitted())
      for (size_t i = 0; i < keys_.size(); ++i) resid_[i] -= structure_.log_efficiency(shapes[i]);
  }
}

double PointModel::base_log_efficiency(const PackedKey& key) const {
  return structure_.fitted() ? structure_.log_efficiency(attention_shape(key)) : 0;
}

std::vector<std::pair<PackedKey, double>> PointModel::entries() const {
  std::vector<std::pair<PackedKey, double>> out;
  out.reserve(keys_.size());
  for (size_t i = 0; i < keys_.size(); ++i) out.emplace_back(keys_[i], eff_[i]);
  return out;
}

EfficiencyAnswer PointModel::predict(const PackedKey& key) const {
  if (keys_.empty() || key.kind != kind_) return {};
  const PointFeatures f = point_features(key);
  if (f.n == 0) return {};
  return predict_features(f, &key, -1, base_log_efficiency(key));
}

bool PointModel::nearest(const PointFeatures& f, size_t begin, size_t end, bool skip_same, double base,
                         EfficiencyAnswer& out, bool& measured) const {
  // The nearest kPointNeighbours (distance², index), kept sorted: a short insertion. Points of
  // the query's features (distance 0) are averaged apart: a measurement of the same shape.
  Nearest<kPointNeighbours> near;
  int zeros = 0;
  double zero_acc = 0;
  for (size_t at = begin; at < end; ++at) {
    const size_t i = order_[at];
    const PointFeatures& p = features_[i];
    double d2 = 0;
    for (int d = 0; d < f.n; ++d) {
      const double dx = p.x[d] - f.x[d];
      d2 += dx * dx;
    }
    if (d2 == 0) {
      if (skip_same && p.cls == f.cls) continue;
      if (p.cls == f.cls) {
        zero_acc += log_eff_[i];
        ++zeros;
        continue;
      }
    }
    near.offer(d2, i);
  }
  measured = zeros > 0;
  if (zeros > 0) {
    out = {std::exp(zero_acc / zeros), EfficiencySource::Measured};
    return true;
  }
  if (near.count == 0) return false;
  double acc = 0, wsum = 0;
  for (int j = 0; j < near.count; ++j) {
    // A point of the same features in another class (no class of the query's): weight as a
    // very close one rather than dividing by zero.
    const double d = std::max(std::sqrt(near.items[j].first), 1e-6);
    const double w = 1 / std::pow(d, kPointDistancePower);
    acc += w * resid_[near.items[j].second];
    wsum += w;
  }
  out = {std::exp(base + acc / wsum), EfficiencySource::Interpolated};
  return true;
}

EfficiencyAnswer PointModel::predict_features(const PointFeatures& f, const PackedKey* key, long skip,
                                              double base) const {
  if (key) {
    if (const auto it = exact_.find(*key); it != exact_.end()) return {eff_[it->second], EfficiencySource::Measured};
  }
  const bool skip_same = skip >= 0;
  EfficiencyAnswer out;
  bool measured = false;
  // The class's points, else every point (extrapolated).
  for (const Class& c : classes_) {
    if (c.cls != f.cls) continue;
    if (!nearest(f, c.begin, c.end, skip_same, base, out, measured)) break;
    if (measured) return out;
    bool inside = true;
    for (int d = 0; d < f.n; ++d) inside = inside && f.x[d] >= c.lo[d] && f.x[d] <= c.hi[d];
    if (!inside) out.source = EfficiencySource::Extrapolated;
    return out;
  }
  if (!nearest(f, 0, order_.size(), skip_same, base, out, measured)) return {};
  if (!measured) out.source = EfficiencySource::Extrapolated;
  return out;
}

std::vector<PointModel::HeldOut> PointModel::leave_one_out() const {
  std::vector<HeldOut> out;
  out.reserve(keys_.size());
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (structure_.fitted()) {
      // The structure refitted without the point's shape (its features and class).
      std::vector<std::pair<PackedKey, double>> rest;
      for (size_t j = 0; j < keys_.size(); ++j) {
        const bool same = features_[j].cls == features_[i].cls &&
                          std::equal(features_[j].x, features_[j].x + features_[j].n, features_[i].x);
        if (!same) rest.emplace_back(keys_[j], eff_[j]);
      }
      const double predicted = rest.empty() ? 0 : PointModel(kind_, std::move(rest)).predict(keys_[i]).efficiency;
      out.push_back({keys_[i], eff_[i], predicted});
      continue;
    }
    const EfficiencyAnswer a = predict_features(features_[i], nullptr, static_cast<long>(i), 0);
    out.push_back({keys_[i], eff_[i], a.efficiency});
  }
  return out;
}

uint64_t PointModel::content_hash() const {
  uint64_t h = 1469598103934665603ull;
  const auto bytes = [&](const void* p, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      h ^= static_cast<const unsigned char*>(p)[i];
      h *= 1099511628211ull;
    }
  };
  bytes(&kind_, sizeof kind_);
  bytes(keys_.data(), keys_.size() * sizeof(PackedKey));
  bytes(log_eff_.data(), log_eff_.size() * sizeof(double));
  bytes(provenance_json.data(), provenance_json.size());
  return h;
}

}  // namespace trainsim
