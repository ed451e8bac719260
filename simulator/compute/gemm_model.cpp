// GEMM efficiency model: grid interpolation in log space (see gemm_model.h for the method and
// tools/measured for the held-out figures that chose it).
#include "compute/gemm_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>

#include "core/text.h"

namespace trainsim {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

int series_of(double m) { return m < kGemmMAlign || std::fmod(m, kGemmMAlign) == 0 ? 0 : 1; }

// Position of log value `x` among sorted `logs`: the bracketing indices and the weight of `hi`.
// Clamped to the ends (`clamped` set); an exact node gives lo == hi, weight 0.
void bracket(const std::vector<double>& logs, double x, size_t& lo, size_t& hi, double& w, bool& clamped) {
  const size_t n = logs.size();
  w = 0;
  if (x <= logs.front()) {
    lo = hi = 0;
    clamped = clamped || x < logs.front();
    return;
  }
  if (x >= logs.back()) {
    lo = hi = n - 1;
    clamped = clamped || x > logs.back();
    return;
  }
  hi = static_cast<size_t>(std::lower_bound(logs.begin(), logs.end(), x) - logs.begin());
  if (logs[hi] == x) {
    lo = hi;
    return;
  }
  lo = hi - 1;
  w = (x - logs[lo]) / (logs[hi] - logs[lo]);
}

bool valid(double v) { return std::isfinite(v) && v > 0; }

bool in_range(double size) { return size <= kModelMaxSize; }
bool time_in_range(double t) { return t >= kModelMinTimeS && t <= kModelMaxTimeS; }

std::string node_text(double m, double n, double k) { return strprintf("m=%g n=%g k=%g", m, n, k); }

}  // namespace

double gemm_wave_factor(const GemmWaves& w, double m, double n) {
  if (!w.on()) return 1;
  const double waves = std::ceil(m / w.tile_m) * std::ceil(n / w.tile_n) / w.sms;
  return waves >= 1 ? std::ceil(waves) / waves : 1;
}

void GemmModel::set_waves(const GemmWaves& w) {
  const bool off = w.sms == 0 && w.tile_m == 0 && w.tile_n == 0;
  if (!off && !(valid(w.sms) && valid(w.tile_m) && valid(w.tile_n)))
    throw std::invalid_argument(strprintf("GEMM waves: sm_count %g, tile_m %g, tile_n %g: each must be finite and > 0",
                                          w.sms, w.tile_m, w.tile_n));
  for (size_t i = 0; i < m_.size(); ++i)
    for (size_t j = 0; j < n_.size(); ++j) {
      const double shift = std::log(gemm_wave_factor(waves_, m_[i], n_[j]) / gemm_wave_factor(w, m_[i], n_[j]));
      for (size_t l = 0; l < k_.size(); ++l) y_[at(i, j, l)] += shift;
    }
  waves_ = w;
}

const char* efficiency_source_name(EfficiencySource s) {
  switch (s) {
    case EfficiencySource::Measured: return "measured";
    case EfficiencySource::Interpolated: return "interpolated";
    case EfficiencySource::Extrapolated: return "extrapolated";
    case EfficiencySource::Default: break;
  }
  return "default";
}

GemmModel::GemmModel(const std::vector<GemmPoint>& points) {
  std::map<std::tuple<double, double, double>, double> by_node;
  for (const auto& p : points) {
    if (!valid(p.m) || !valid(p.n) || !valid(p.k) || !valid(p.time_s))
      throw std::invalid_argument(strprintf("GEMM point %s time_s=%g: every value must be finite and > 0",
                                            node_text(p.m, p.n, p.k).c_str(), p.time_s));
    if (!in_range(p.m) || !in_range(p.n) || !in_range(p.k) || !time_in_range(p.time_s))
      throw std::invalid_argument(strprintf("GEMM point %s time_s=%g: sizes must be at most %g and the time from %g "
                                            "to %g s", node_text(p.m, p.n, p.k).c_str(), p.time_s, kModelMaxSize,
                                            kModelMinTimeS, kModelMaxTimeS));
    if (!by_node.emplace(std::tuple{p.m, p.n, p.k}, p.time_s).second)
      throw std::invalid_argument(strprintf("GEMM point %s time_s=%g: a second time for the same node (first %g s)",
                                            node_text(p.m, p.n, p.k).c_str(), p.time_s,
                                            by_node.at({p.m, p.n, p.k})));
  }
  for (const auto& [node, t] : by_node) {
    m_.push_back(std::get<0>(node));
    n_.push_back(std::get<1>(node));
    k_.push_back(std::get<2>(node));
  }
  for (auto* axis : {&m_, &n_, &k_}) {
    std::sort(axis->begin(), axis->end());
    axis->erase(std::unique(axis->begin(), axis->end()), axis->end());
  }
  // Points scattered over unrelated m, n and k would span a grid of up to points³ nodes.
  const double nodes = static_cast<double>(m_.size()) * static_cast<double>(n_.size()) * static_cast<double>(k_.size());
  if (nodes > std::max(kGemmMaxNodesPerPoint * static_cast<double>(by_node.size()), kGemmMinNodeLimit))
    throw std::invalid_argument(std::to_string(by_node.size()) + " points span a grid of " + std::to_string(m_.size()) +
                                " m × " + std::to_string(n_.size()) + " n × " + std::to_string(k_.size()) +
                                " k nodes; a GEMM grid needs points on shared m, n and k values (at most " +
                                std::to_string(static_cast<int>(kGemmMaxNodesPerPoint)) + " nodes per point)");
  y_.assign(m_.size() * n_.size() * k_.size(), kNaN);
  for (const auto& [node, t] : by_node) {
    const auto find = [](const std::vector<double>& a, double v) {
      return static_cast<size_t>(std::lower_bound(a.begin(), a.end(), v) - a.begin());
    };
    const auto [m, n, k] = node;
    y_[at(find(m_, m), find(n_, n), find(k_, k))] = std::log(t / (m * n * k));
  }
  index();
}

GemmModel::GemmModel(std::vector<double> m, std::vector<double> n, std::vector<double> k, std::vector<double> time_s)
    : m_(std::move(m)), n_(std::move(n)), k_(std::move(k)) {
  for (const auto* axis : {&m_, &n_, &k_}) {
    for (size_t i = 0; i < axis->size(); ++i) {
      if (!valid((*axis)[i])) throw std::invalid_argument("GEMM grid axis values must be finite and > 0");
      if (!in_range((*axis)[i]))
        throw std::invalid_argument(strprintf("GEMM grid axis value %g: must be at most %g", (*axis)[i], kModelMaxSize));
      if (i > 0 && !((*axis)[i] > (*axis)[i - 1]))
        throw std::invalid_argument("GEMM grid axis values must be strictly increasing");
    }
  }
  if (time_s.size() != m_.size() * n_.size() * k_.size())
    throw std::invalid_argument("GEMM grid: " + std::to_string(time_s.size()) + " times for " +
                                std::to_string(m_.size()) + " × " + std::to_string(n_.size()) + " × " +
                                std::to_string(k_.size()) + " nodes");
  y_.assign(time_s.size(), kNaN);
  for (size_t i = 0; i < m_.size(); ++i)
    for (size_t j = 0; j < n_.size(); ++j)
      for (size_t l = 0; l < k_.size(); ++l) {
        const double t = time_s[at(i, j, l)];
        if (valid(t) && !time_in_range(t))
          throw std::invalid_argument(strprintf("GEMM grid: time %g s at %s: expected %g to %g s", t,
                                                node_text(m_[i], n_[j], k_[l]).c_str(), kModelMinTimeS,
                                                kModelMaxTimeS));
        if (valid(t)) y_[at(i, j, l)] = std::log(t / (m_[i] * n_[j] * k_[l]));
      }
  index();
}

void GemmModel::index() {
  points_ = 0;
  for (double y : y_) points_ += std::isnan(y) ? 0 : 1;
  lm_.clear();
  ln_.clear();
  lk_.clear();
  for (double v : m_) lm_.push_back(std::log(v));
  for (double v : n_) ln_.push_back(std::log(v));
  for (double v : k_) lk_.push_back(std::log(v));
  for (auto& s : series_) s.clear();
  for (size_t i = 0; i < m_.size(); ++i) series_[series_of(m_[i])].push_back(i);
}

double GemmModel::time_at(size_t i, size_t j, size_t l) const {
  const double y = y_[at(i, j, l)];
  return std::isnan(y) ? 0 : std::exp(y) * m_[i] * n_[j] * k_[l] * gemm_wave_factor(waves_, m_[i], n_[j]);
}

bool GemmModel::node_y(int s, size_t i, size_t j, size_t l, double& y, bool& edge) const {
  const std::vector<size_t>& ms = series_[s];
  const double v = y_[at(ms[i], j, l)];
  if (!std::isnan(v)) {
    y = v;
    return true;
  }
  // A hole: along each axis the nearest measured nodes on either side.
  double acc = 0, wsum = 0;
  double near_y = 0, near_d = std::numeric_limits<double>::infinity();
  const size_t pos[3] = {i, j, l};
  const size_t len[3] = {ms.size(), n_.size(), k_.size()};
  for (int axis = 0; axis < 3; ++axis) {
    const auto node = [&](size_t p) {
      return axis == 0 ? at(ms[p], j, l) : axis == 1 ? at(ms[i], p, l) : at(ms[i], j, p);
    };
    const auto coord = [&](size_t p) { return axis == 0 ? lm_[ms[p]] : axis == 1 ? ln_[p] : lk_[p]; };
    size_t lo = pos[axis], hi = pos[axis];
    bool has_lo = false, has_hi = false;
    while (lo > 0)
      if (!std::isnan(y_[node(--lo)])) {
        has_lo = true;
        break;
      }
    while (hi + 1 < len[axis])
      if (!std::isnan(y_[node(++hi)])) {
        has_hi = true;
        break;
      }
    const double x = coord(pos[axis]);
    if (has_lo && has_hi) {
      const double span = coord(hi) - coord(lo);
      const double w = (x - coord(lo)) / span;
      const double ylo = y_[node(lo)], yhi = y_[node(hi)];
      // How well a straight line across the gap holds on this axis: the next measured node
      // beyond each neighbour, and the miss of the line through it and the far neighbour.
      const auto miss = [&](size_t out, size_t near, size_t far) {
        const double f = (coord(near) - coord(out)) / (coord(far) - coord(out));
        return std::abs(y_[node(out)] + f * (y_[node(far)] - y_[node(out)]) - y_[node(near)]);
      };
      double miss_sum = 0;
      int misses = 0;
      for (size_t p = lo; p > 0;)
        if (!std::isnan(y_[node(--p)])) {
          miss_sum += miss(p, lo, hi);
          ++misses;
          break;
        }
      for (size_t p = hi; p + 1 < len[axis];)
        if (!std::isnan(y_[node(++p)])) {
          miss_sum += miss(p, hi, lo);
          ++misses;
          break;
        }
      const double rough = misses ? miss_sum / misses : kGemmAxisMissUnknown;
      const double weight = 1 / (span * (rough + kGemmAxisMissFloor));
      acc += (ylo + w * (yhi - ylo)) * weight;
      wsum += weight;
      continue;
    }
    if (has_lo && x - coord(lo) < near_d) {
      near_d = x - coord(lo);
      near_y = y_[node(lo)];
    }
    if (has_hi && coord(hi) - x < near_d) {
      near_d = coord(hi) - x;
      near_y = y_[node(hi)];
    }
  }
  if (wsum > 0) {
    y = acc / wsum;
    return true;
  }
  if (std::isfinite(near_d)) {
    y = near_y;
    edge = true;
    return true;
  }
  return false;
}

GemmAnswer GemmModel::predict_on(int s, double m, double n, double k) const {
  const std::vector<size_t>& ms = series_[s];
  // Log m of the series' rows (few: a short scan instead of a second array per series).
  size_t ia0 = 0, ia1 = 0;
  double wa = 0;
  bool clamped = false;
  {
    const double x = std::log(m);
    if (x <= lm_[ms.front()]) {
      clamped = x < lm_[ms.front()];
    } else if (x >= lm_[ms.back()]) {
      ia0 = ia1 = ms.size() - 1;
      clamped = x > lm_[ms.back()];
    } else {
      size_t hi = 1;
      while (lm_[ms[hi]] < x) ++hi;
      if (lm_[ms[hi]] == x) {
        ia0 = ia1 = hi;
      } else {
        ia0 = hi - 1;
        ia1 = hi;
        wa = (x - lm_[ms[ia0]]) / (lm_[ms[ia1]] - lm_[ms[ia0]]);
      }
    }
  }
  size_t jb0, jb1, lc0, lc1;
  double wb, wc;
  bracket(ln_, std::log(n), jb0, jb1, wb, clamped);
  bracket(lk_, std::log(k), lc0, lc1, wc, clamped);
  double acc = 0, wsum = 0;
  bool edge = false;
  for (int a = 0; a < 2; ++a) {
    const double fa = a ? wa : 1 - wa;
    if (fa == 0) continue;
    for (int b = 0; b < 2; ++b) {
      const double fb = b ? wb : 1 - wb;
      if (fb == 0) continue;
      for (int c = 0; c < 2; ++c) {
        const double fc = c ? wc : 1 - wc;
        if (fc == 0) continue;
        double y;
        if (!node_y(s, a ? ia1 : ia0, b ? jb1 : jb0, c ? lc1 : lc0, y, edge)) continue;
        acc += fa * fb * fc * y;
        wsum += fa * fb * fc;
      }
    }
  }
  if (!(wsum > 0)) return {};
  return {std::exp(acc / wsum) * m * n * k * gemm_wave_factor(waves_, m, n),
          clamped || edge ? EfficiencySource::Extrapolated : EfficiencySource::Interpolated};
}

GemmAnswer GemmModel::predict(double m, double n, double k) const {
  if (points_ == 0 || !valid(m) || !valid(n) || !valid(k)) return {};
  const auto i = std::lower_bound(m_.begin(), m_.end(), m);
  const auto j = std::lower_bound(n_.begin(), n_.end(), n);
  const auto l = std::lower_bound(k_.begin(), k_.end(), k);
  if (i != m_.end() && *i == m && j != n_.end() && *j == n && l != k_.end() && *l == k) {
    const size_t node = at(static_cast<size_t>(i - m_.begin()), static_cast<size_t>(j - n_.begin()),
                           static_cast<size_t>(l - k_.begin()));
    if (!std::isnan(y_[node])) return {time_at(static_cast<size_t>(i - m_.begin()), static_cast<size_t>(j - n_.begin()),
                                               static_cast<size_t>(l - k_.begin())),
                                       EfficiencySource::Measured};
  }
  int s = series_of(m);
  if (series_[s].empty()) s = 1 - s;
  return predict_on(s, m, n, k);
}

uint64_t GemmModel::content_hash() const {
  uint64_t h = 1469598103934665603ull;
  const auto bytes = [&](const void* p, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      h ^= static_cast<const unsigned char*>(p)[i];
      h *= 1099511628211ull;
    }
  };
  for (const auto* v : {&m_, &n_, &k_, &y_}) {
    const size_t n = v->size();
    bytes(&n, sizeof n);
    bytes(v->data(), n * sizeof(double));
  }
  if (waves_.on()) {
    const double w[3] = {waves_.sms, waves_.tile_m, waves_.tile_n};
    bytes(w, sizeof w);
  }
  bytes(provenance_json.data(), provenance_json.size());
  return h;
}

std::vector<GemmModel::HeldOut> GemmModel::leave_one_out() const {
  GemmModel without = *this;
  std::vector<HeldOut> out;
  out.reserve(points_);
  for (size_t i = 0; i < m_.size(); ++i)
    for (size_t j = 0; j < n_.size(); ++j)
      for (size_t l = 0; l < k_.size(); ++l) {
        double& y = without.y_[at(i, j, l)];
        if (std::isnan(y)) continue;
        const double kept = y;
        y = kNaN;
        const GemmAnswer a = without.predict(m_[i], n_[j], k_[l]);
        y = kept;
        out.push_back({m_[i], n_[j], k_[l], time_at(i, j, l), a.time_s});
      }
  return out;
}

}  // namespace trainsim
