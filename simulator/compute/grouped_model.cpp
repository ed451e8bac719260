// Grouped-GEMM efficiency model: series of measured expert shapes (see grouped_model.h).
#include "compute/grouped_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>

#include "core/text.h"


namespace trainsim {
namespace {

bool valid(double v) { return std::isfinite(v) && v > 0; }

std::string series_name(const GroupedSeries& s) {
  return strprintf("grouped series experts=%g hidden=%g inter=%g", s.experts, s.hidden, s.inter);
}

// Solves the 4 × 4 system a·c = b in place (Gaussian elimination, partial pivoting); false when
// it is singular.
bool solve4(double a[4][4], double b[4], double c[4]) {
  for (int col = 0; col < 4; ++col) {
    int piv = col;
    for (int r = col + 1; r < 4; ++r)
      if (std::abs(a[r][col]) > std::abs(a[piv][col])) piv = r;
    if (!(std::abs(a[piv][col]) > 1e-300)) return false;
    std::swap(a[piv], a[col]);
    std::swap(b[piv], b[col]);
    for (int r = col + 1; r < 4; ++r) {
      const double f = a[r][col] / a[col][col];
      for (int q = col; q < 4; ++q) a[r][q] -= f * a[col][q];
      b[r] -= f * b[col];
    }
  }
  for (int r = 3; r >= 0; --r) {
    double v = b[r];
    for (int q = r + 1; q < 4; ++q) v -= a[r][q] * c[q];
    c[r] = v / a[r][r];
  }
  return true;
}

}  // namespace

bool GroupedModel::local_fit(const std::vector<Sample>& samples, double& y) {
  // Weighted least squares of y = c0 + c1·de + c2·dn + c3·dk (offsets from the query, so c0 is
  // the answer), Gaussian weights in the distance, a ridge on the slopes; then Cleveland's
  // robustness iterations (bisquare weights on the residuals over 6 median absolute residuals).
  const size_t n = samples.size();
  std::vector<double> w(n), rw(n, 1.0), res(n);
  double wmax = 0;
  for (size_t i = 0; i < n; ++i) {
    const Sample& p = samples[i];
    const double d2 = p.de * p.de + p.dn * p.dn + p.dk * p.dk;
    w[i] = std::exp(-d2 / (2 * kGroupedBandwidth * kGroupedBandwidth));
    wmax = std::max(wmax, w[i]);
  }
  if (!(wmax > 0)) return false;
  double c[4] = {};
  for (int it = 0; it <= kGroupedRobustIterations; ++it) {
    double a[4][4] = {}, b[4] = {};
    for (size_t i = 0; i < n; ++i) {
      const Sample& p = samples[i];
      const double x[4] = {1, p.de, p.dn, p.dk};
      const double ww = w[i] * rw[i];
      for (int r = 0; r < 4; ++r) {
        b[r] += ww * x[r] * p.y;
        for (int q = 0; q < 4; ++q) a[r][q] += ww * x[r] * x[q];
      }
    }
    for (int r = 1; r < 4; ++r) a[r][r] += kGroupedRidge;
    if (!solve4(a, b, c)) return false;
    if (it == kGroupedRobustIterations) break;
    // Residuals of the samples that count (weight ≥ 1e-3 of the largest) set the scale.
    std::vector<double> abs_res;
    for (size_t i = 0; i < n; ++i) {
      const Sample& p = samples[i];
      res[i] = p.y - (c[0] + c[1] * p.de + c[2] * p.dn + c[3] * p.dk);
      if (w[i] >= 1e-3 * wmax) abs_res.push_back(std::abs(res[i]));
    }
    auto mid = abs_res.begin() + static_cast<long>(abs_res.size() / 2);
    std::nth_element(abs_res.begin(), mid, abs_res.end());
    const double scale = 6 * *mid;
    if (!(scale > 0)) break;
    for (size_t i = 0; i < n; ++i) {
      const double u = res[i] / scale;
      rw[i] = std::abs(u) < 1 ? (1 - u * u) * (1 - u * u) : 0;
    }
  }
  y = c[0];
  return std::isfinite(y);
}

GroupedModel::GroupedModel(std::vector<GroupedSeries> series) {
  // (E, h, I) → tokens → (sum of log time, count).
  std::map<std::tuple<double, double, double>, std::map<double, std::pair<double, int>>> merged;
  for (const GroupedSeries& s : series) {
    if (!valid(s.experts) || !valid(s.hidden) || !valid(s.inter))
      throw std::invalid_argument(series_name(s) + ": experts, hidden and inter must be finite and > 0");
    if (s.experts > kModelMaxSize || s.hidden > kModelMaxSize || s.inter > kModelMaxSize)
      throw std::invalid_argument(series_name(s) + strprintf(": experts, hidden and inter must be at most %g",
                                                             kModelMaxSize));
    if (s.tokens.size() != s.time_s.size() || s.tokens.empty())
      throw std::invalid_argument(series_name(s) + ": " + std::to_string(s.tokens.size()) + " token counts, " +
                                  std::to_string(s.time_s.size()) + " times: one time per token count, at least one");
    auto& pts = merged[{s.experts, s.hidden, s.inter}];
    for (size_t i = 0; i < s.tokens.size(); ++i) {
      if (!valid(s.tokens[i]) || !valid(s.time_s[i]))
        throw std::invalid_argument(series_name(s) + strprintf(": tokens %g time_s %g: every value must be finite "
                                                               "and > 0",
                                                               s.tokens[i], s.time_s[i]));
      if (s.tokens[i] > kModelMaxSize || s.time_s[i] < kModelMinTimeS || s.time_s[i] > kModelMaxTimeS)
        throw std::invalid_argument(series_name(s) + strprintf(": tokens %g time_s %g: tokens must be at most %g and "
                                                               "the time from %g to %g s",
                                                               s.tokens[i], s.time_s[i], kModelMaxSize,
                                                               kModelMinTimeS, kModelMaxTimeS));
      auto& [acc, n] = pts[s.tokens[i]];
      acc += std::log(s.time_s[i]);
      ++n;
    }
  }
  for (const auto& [shape, pts] : merged) {
    GroupedSeries s;
    std::tie(s.experts, s.hidden, s.inter) = shape;
    for (const auto& [m, at] : pts) {
      s.tokens.push_back(m);
      s.time_s.push_back(std::exp(at.first / at.second));
    }
    points_ += s.tokens.size();
    const double e = std::log(s.experts), h = std::log(s.hidden), i = std::log(s.inter);
    features_.push_back({e, std::log(2 * s.inter), h, h, i});
    const Features& f = features_.back();
    if (series_.empty()) {
      lo_[0] = hi_[0] = e;
      lo_[1] = hi_[1] = f.up_n;
      lo_[2] = hi_[2] = f.up_k;
    }
    lo_[0] = std::min(lo_[0], e);
    hi_[0] = std::max(hi_[0], e);
    lo_[1] = std::min({lo_[1], f.up_n, f.down_n});
    hi_[1] = std::max({hi_[1], f.up_n, f.down_n});
    lo_[2] = std::min({lo_[2], f.up_k, f.down_k});
    hi_[2] = std::max({hi_[2], f.up_k, f.down_k});
    series_.push_back(std::move(s));
  }
}

bool GroupedModel::series_y(size_t si, double m, long skip, double& y, bool& measured, bool& inside) const {
  const GroupedSeries& s = series_[si];
  const double unit = grouped_pair_flops(1, s.experts, s.hidden, s.inter);  // FLOPs per token per expert
  // The nearest kept points below and at-or-above m.
  long lo = -1, hi = -1;
  const long n = static_cast<long>(s.tokens.size());
  for (long i = 0; i < n; ++i) {
    if (i == skip) continue;
    if (s.tokens[static_cast<size_t>(i)] < m) {
      lo = i;
    } else {
      hi = i;
      break;
    }
  }
  if (lo < 0 && hi < 0) return false;
  const auto y_at = [&](long i) {
    const auto u = static_cast<size_t>(i);
    return std::log(s.time_s[u] / (unit * s.tokens[u]));
  };
  if (hi >= 0 && s.tokens[static_cast<size_t>(hi)] == m) {
    y = y_at(hi);
    measured = true;
    return true;
  }
  if (lo >= 0 && hi >= 0) {
    const double x0 = std::log(s.tokens[static_cast<size_t>(lo)]), x1 = std::log(s.tokens[static_cast<size_t>(hi)]);
    const double w = (std::log(m) - x0) / (x1 - x0);
    y = y_at(lo) + w * (y_at(hi) - y_at(lo));
    return true;
  }
  inside = false;
  if (hi >= 0) {
    // Fewer tokens than measured: the time of the smallest measured count (memory-bound floor).
    y = std::log(s.time_s[static_cast<size_t>(hi)] / (unit * m));
  } else {
    y = y_at(lo);  // more tokens than measured: the largest count's time per FLOP
  }
  return true;
}

GroupedAnswer GroupedModel::predict_skip(double m, double experts, double n, double k, long skip_series,
                                         long skip_point) const {
  if (series_.empty() || !valid(m) || !valid(experts) || !valid(n) || !valid(k)) return {};
  const double le = std::log(experts), ln = std::log(n), lk = std::log(k);
  // The series of the query's shape (E and one of its two GEMMs equal): their answers.
  double exact_acc = 0;
  int exact = 0;
  bool all_measured = true, inside = true;
  std::vector<Sample> samples;
  samples.reserve(2 * series_.size());
  for (size_t i = 0; i < series_.size(); ++i) {
    if (static_cast<long>(i) == skip_series && skip_point < 0) continue;
    const Features& f = features_[i];
    const bool same = f.e == le && ((f.up_n == ln && f.up_k == lk) || (f.down_n == ln && f.down_k == lk));
    const long skip = static_cast<long>(i) == skip_series ? skip_point : -1;
    double y;
    bool measured = false, in = true;
    if (!series_y(i, m, skip, y, measured, in)) continue;
    if (same) {
      all_measured = all_measured && measured;
      inside = inside && in;
      exact_acc += y;
      ++exact;
      continue;
    }
    // Each series stands at both of its GEMMs, offsets from the query in log space.
    samples.push_back({f.e - le, f.up_n - ln, f.up_k - lk, y, in});
    samples.push_back({f.e - le, f.down_n - ln, f.down_k - lk, y, in});
  }
  if (exact > 0) {
    const EfficiencySource src = all_measured ? EfficiencySource::Measured
                                 : inside     ? EfficiencySource::Interpolated
                                              : EfficiencySource::Extrapolated;
    return {std::exp(exact_acc / exact), src};
  }
  double y;
  if (samples.empty() || !local_fit(samples, y)) return {};
  // Inside the measured M range of the nearest series (the one weighing most).
  const auto d2 = [](const Sample& p) { return p.de * p.de + p.dn * p.dn + p.dk * p.dk; };
  inside = std::min_element(samples.begin(), samples.end(),
                            [&](const Sample& a, const Sample& b) { return d2(a) < d2(b); })->inside;
  inside = inside && le >= lo_[0] && le <= hi_[0] && ln >= lo_[1] && ln <= hi_[1] && lk >= lo_[2] && lk <= hi_[2];
  return {std::exp(y), inside ? EfficiencySource::Interpolated : EfficiencySource::Extrapolated};
}

GroupedAnswer GroupedModel::predict(double m, double experts, double n, double k) const {
  return predict_skip(m, experts, n, k, -1, -1);
}

std::vector<GroupedModel::HeldOut> GroupedModel::leave_one_out(bool series_out) const {
  std::vector<HeldOut> out;
  out.reserve(points_);
  for (size_t i = 0; i < series_.size(); ++i) {
    const GroupedSeries& s = series_[i];
    for (size_t p = 0; p < s.tokens.size(); ++p) {
      // The up projection's shape stands for the series (its down projection gives the same).
      const GroupedAnswer a = predict_skip(s.tokens[p], s.experts, 2 * s.inter, s.hidden, static_cast<long>(i),
                                           series_out ? -1 : static_cast<long>(p));
      const double flops = grouped_pair_flops(s.tokens[p], s.experts, s.hidden, s.inter);
      out.push_back({s.experts, s.hidden, s.inter, s.tokens[p], s.time_s[p], a.s_per_flop * flops});
    }
  }
  return out;
}

uint64_t GroupedModel::content_hash() const {
  uint64_t h = 1469598103934665603ull;
  const auto bytes = [&](const void* p, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      h ^= static_cast<const unsigned char*>(p)[i];
      h *= 1099511628211ull;
    }
  };
  for (const GroupedSeries& s : series_) {
    const double shape[3] = {s.experts, s.hidden, s.inter};
    bytes(shape, sizeof shape);
    const size_t n = s.tokens.size();
    bytes(&n, sizeof n);
    bytes(s.tokens.data(), n * sizeof(double));
    bytes(s.time_s.data(), n * sizeof(double));
  }
  bytes(provenance_json.data(), provenance_json.size());
  return h;
}

}  // namespace trainsim
