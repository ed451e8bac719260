#include "views/axis.h"

#include <algorithm>
#include <cmath>

#include "core/text.h"

namespace trainsim {

Ticks nice_ticks(double lo, double hi, int target) {
  Ticks t;
  if (!(hi >= lo) || !std::isfinite(lo) || !std::isfinite(hi)) lo = hi = 0;
  const double raw = (hi - lo) / std::max(1, target);
  double step = 1;
  if (raw > 0) {
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    const double f = raw / mag;
    step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
  } else {
    step = lo != 0 ? std::pow(10.0, std::floor(std::log10(std::abs(lo)))) : 1;
  }
  t.step = step;
  t.lo = std::floor(lo / step) * step;
  t.hi = std::ceil(hi / step) * step;
  if (t.hi <= t.lo) t.hi = t.lo + step;
  const auto n = static_cast<int>(std::llround((t.hi - t.lo) / step));
  for (int i = 0; i <= n; ++i) t.values.push_back(t.lo + step * i);
  t.decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  return t;
}

std::string tick_label(const Ticks& t, double v) {
  if (std::abs(v) < t.step * 1e-9) v = 0;  // no "-0"
  return strprintf("%.*f", t.decimals, v);
}

}  // namespace trainsim
