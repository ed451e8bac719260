// Step estimate.
#include "estimate/estimate.h"

#include <algorithm>

#include "core/error.h"

namespace trainsim {

double Estimate::peak_alloc_bytes() const {
  double m = 0;
  for (const auto& s : stages) m = std::max(m, s.peak_alloc_bytes);
  return m;
}

double Estimate::peak_reserved_bytes() const {
  double m = 0;
  for (const auto& s : stages) m = std::max(m, s.peak_reserved_bytes);
  return m;
}

Estimate estimate(const ModelConfig&, const StrategyConfig&, const SystemConfig&) {
  throw Error("estimate is not implemented yet");
}

}  // namespace trainsim
