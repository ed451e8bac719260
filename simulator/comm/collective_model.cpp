// Size-dependent collective model (collective_model.h): per group size an α–β line and the
// protocol regimes fitted, the residuals to the line interpolated in log size, group sizes in
// log n.
#include "comm/collective_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>

#include "core/text.h"

namespace trainsim {

namespace {

struct LineFit {
  double alpha = 0, beta = 0, sse = 0;
};

// Least squares on the relative error of t = α + x·β over points [a, b): minimises
// Σ (α/t + β·x/t − 1)², with α, β ≥ 0 (a negative one is pinned at 0 and the other refitted).
LineFit fit_line(const std::vector<double>& x, const std::vector<double>& t, size_t a, size_t b) {
  double suu = 0, suv = 0, svv = 0, su = 0, sv = 0;
  for (size_t i = a; i < b; ++i) {
    const double u = 1 / t[i], v = x[i] / t[i];
    suu += u * u;
    suv += u * v;
    svv += v * v;
    su += u;
    sv += v;
  }
  LineFit f;
  const double det = suu * svv - suv * suv;
  if (det > 1e-12 * suu * svv) {
    f.alpha = (su * svv - sv * suv) / det;
    f.beta = (sv * suu - su * suv) / det;
  } else {
    f.alpha = -1;  // one point, or sizes too close to tell latency from bandwidth
  }
  if (f.alpha < 0 || f.beta < 0) {
    // The better of a pure-bandwidth and a pure-latency line.
    const LineFit bw{0, sv / svv, 0}, lat{su / suu, 0, 0};
    double e_bw = 0, e_lat = 0;
    for (size_t i = a; i < b; ++i) {
      e_bw += std::pow(bw.beta * x[i] / t[i] - 1, 2);
      e_lat += std::pow(lat.alpha / t[i] - 1, 2);
    }
    f = e_bw <= e_lat || b - a == 1 ? bw : lat;
  }
  for (size_t i = a; i < b; ++i) f.sse += std::pow((f.alpha + f.beta * x[i]) / t[i] - 1, 2);
  return f;
}

}  // namespace

CollectiveCurve::CollectiveCurve(int64_t n, double bus, std::vector<double> bytes, std::vector<double> time_s)
    : n_(n), bus_(bus) {
  std::vector<size_t> order(bytes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bytes[a] < bytes[b]; });
  for (size_t i : order) {
    bytes_.push_back(bytes[i]);
    t_.push_back(time_s[i]);
    lb_.push_back(std::log(bytes[i]));
  }
  // The monotone envelope: a size answers no slower than any larger measured size.
  te_ = t_;
  for (size_t i = te_.size(); i-- > 1;) te_[i - 1] = std::min(te_[i - 1], te_[i]);
  fit();
}

void CollectiveCurve::fit() {
  const size_t np = bytes_.size();
  regimes_.clear();
  r_.assign(np, 0.0);
  if (np == 0) return;
  std::vector<double> x(np);
  for (size_t i = 0; i < np; ++i) x[i] = bytes_[i] * bus_;
  const size_t min_pts = kCollectiveRegimePoints;
  const size_t k = std::clamp<size_t>(np / min_pts, 1, kCollectiveRegimes);
  // Every split of the sorted points into k contiguous runs of at least min_pts points.
  std::vector<size_t> best_cut{0, np}, cut(k + 1);
  double best = std::numeric_limits<double>::infinity();
  std::map<std::pair<size_t, size_t>, LineFit> fits;
  auto line_of = [&](size_t a, size_t b) -> const LineFit& {
    auto [it, fresh] = fits.try_emplace({a, b});
    if (fresh) it->second = fit_line(x, te_, a, b);
    return it->second;
  };
  cut[0] = 0;
  cut[k] = np;
  const size_t per = k == 1 ? np : min_pts;
  auto search = [&](auto&& self, size_t level) -> void {
    if (level == k) {
      double sse = 0;
      for (size_t s = 0; s < k; ++s) sse += line_of(cut[s], cut[s + 1]).sse;
      if (sse < best) {
        best = sse;
        best_cut = cut;
      }
      return;
    }
    for (size_t c = cut[level - 1] + per; c + per * (k - level) <= np; ++c) {
      cut[level] = c;
      self(self, level + 1);
    }
  };
  if (k == 1) {
    best_cut = {0, np};
  } else {
    search(search, 1);
  }
  for (size_t s = 0; s + 1 < best_cut.size(); ++s) {
    const LineFit& f = line_of(best_cut[s], best_cut[s + 1]);
    regimes_.push_back({f.alpha, f.beta, std::numeric_limits<double>::infinity()});
  }
  // Switch points: where the lines cross, when between the two regimes' measured sizes.
  for (size_t s = 0; s + 1 < regimes_.size(); ++s) {
    const double lo = bytes_[best_cut[s + 1] - 1], hi = bytes_[best_cut[s + 1]];
    const Regime &a = regimes_[s], &b = regimes_[s + 1];
    double at = std::sqrt(lo * hi);
    if (a.beta_s_per_byte > b.beta_s_per_byte) {
      const double cross = (b.alpha_s - a.alpha_s) / (a.beta_s_per_byte - b.beta_s_per_byte) / bus_;
      if (cross >= lo && cross <= hi) at = cross;
    }
    regimes_[s].upto_bytes = at;
  }
  const LineFit all = fit_line(x, te_, 0, np);
  base_ = {all.alpha, all.beta, std::numeric_limits<double>::infinity()};
  for (size_t i = 0; i < np; ++i) r_[i] = std::log(te_[i] / line(bytes_[i]));
}

double CollectiveCurve::line(double bytes) const { return base_.alpha_s + bytes * bus_ * base_.beta_s_per_byte; }

double CollectiveCurve::chain(double bytes) const {
  for (const Regime& g : regimes_)
    if (bytes < g.upto_bytes) return g.alpha_s + bytes * bus_ * g.beta_s_per_byte;
  return 0;  // no regimes (no points)
}

CollectiveAnswer CollectiveCurve::predict(double bytes) const {
  const size_t np = lb_.size();
  if (np == 0 || !(bytes > 0)) return {};
  const double lb = std::log(bytes);
  const size_t i = static_cast<size_t>(std::upper_bound(lb_.begin(), lb_.end(), lb) - lb_.begin());
  if (i > 0 && lb - lb_[i - 1] < 1e-9) return {te_[i - 1], EfficiencySource::Measured};
  if (i < np && lb_[i] - lb < 1e-9) return {te_[i], EfficiencySource::Measured};
  double r;
  EfficiencySource src = EfficiencySource::Interpolated;
  if (i == 0 || i == np) {
    r = r_[i == 0 ? 0 : np - 1];
    src = EfficiencySource::Extrapolated;
  } else {
    const double w = (lb - lb_[i - 1]) / (lb_[i] - lb_[i - 1]);
    r = r_[i - 1] + w * (r_[i] - r_[i - 1]);
  }
  return {line(bytes) * std::exp(r), src};
}

const char* CollectiveModel::point_problem(const CollectivePoint& p) {
  if (p.n < 2) return "the group size must be at least 2";
  if (!(p.bytes > 0) || !std::isfinite(p.bytes)) return "the size must be a positive number";
  if (!(p.time_s > 0) || !std::isfinite(p.time_s)) return "the time must be a positive number";
  if (p.bytes > kModelMaxBytes) return "the size must be at most 2^50 bytes (1 PiB)";
  if (p.time_s < kModelMinTimeS || p.time_s > kModelMaxTimeS) return "the time must be from 1 ns to 1000 s";
  return nullptr;
}

CollectiveModel::CollectiveModel(double scale, double offset, std::vector<CollectivePoint> points)
    : scale_(scale), offset_(offset) {
  if (points.empty()) throw std::invalid_argument("no measured points (a size and a time per group size)");
  std::map<int64_t, std::map<double, double>> by_n;
  for (size_t i = 0; i < points.size(); ++i) {
    const CollectivePoint& p = points[i];
    auto bad = [&](const char* what) {
      return std::invalid_argument(strprintf("collective point %zu (n %lld, %g bytes, %g s): %s", i,
                                             static_cast<long long>(p.n), p.bytes, p.time_s, what));
    };
    if (const char* why = point_problem(p)) throw bad(why);
    if (!by_n[p.n].emplace(p.bytes, p.time_s).second) throw bad("a second time for the same size and group size");
  }
  for (const auto& [n, pts] : by_n) {
    std::vector<double> b, t;
    for (const auto& [bytes, time] : pts) {
      b.push_back(bytes);
      t.push_back(time);
    }
    points_ += b.size();
    curves_.emplace_back(n, bus(n), std::move(b), std::move(t));
  }
}

double CollectiveModel::bus(int64_t n) const {
  const double dn = static_cast<double>(n);
  return scale_ * (dn + offset_) / dn;
}

CollectiveAnswer CollectiveModel::predict(double bytes, int64_t n) const {
  if (curves_.empty() || !(bytes > 0) || n < 2) return {};
  const CollectiveCurve* lo = nullptr;
  const CollectiveCurve* hi = nullptr;
  for (const CollectiveCurve& c : curves_) {
    if (c.n() == n) return c.predict(bytes);
    if (c.n() < n) lo = &c;
    if (c.n() > n && !hi) hi = &c;
  }
  // Other group sizes at equal bus bytes (the bus bandwidth is what carries over between them).
  const double x = bytes * bus(n);
  auto at = [&](const CollectiveCurve& c) { return c.predict(x / c.bus()); };
  if (lo && hi) {
    const CollectiveAnswer a = at(*lo), b = at(*hi);
    const double w = std::log(static_cast<double>(n) / static_cast<double>(lo->n())) /
                     std::log(static_cast<double>(hi->n()) / static_cast<double>(lo->n()));
    const double t = std::exp((1 - w) * std::log(a.time_s) + w * std::log(b.time_s));
    return {t, std::max({EfficiencySource::Interpolated, a.source, b.source})};
  }
  const CollectiveAnswer a = at(lo ? *lo : *hi);
  return {a.time_s, EfficiencySource::Extrapolated};
}

std::vector<CollectiveModel::HeldOut> CollectiveModel::leave_one_out() const {
  std::vector<HeldOut> out;
  for (const CollectiveCurve& c : curves_) {
    const size_t np = c.bytes().size();
    for (size_t i = 0; i < np; ++i) {
      std::vector<double> b, t;
      for (size_t j = 0; j < np; ++j)
        if (j != i) {
          b.push_back(c.bytes()[j]);
          t.push_back(c.times()[j]);
        }
      const CollectiveCurve without(c.n(), c.bus(), std::move(b), std::move(t));
      out.push_back({c.n(), c.bytes()[i], c.times()[i], without.predict(c.bytes()[i]).time_s});
    }
  }
  return out;
}

}  // namespace trainsim
