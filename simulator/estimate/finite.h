// Results must be finite: absurd (but individually legal) input numbers can overflow to inf/NaN.
#pragma once

#include <string>

#include "plan/validate.h"
#include "estimate/estimate.h"

namespace trainsim {

/// Throws Error when a headline number of `e` (step time, MFU, throughput, any stage's time or
/// memory) is infinite or NaN, naming the quantity and the three inputs that produced it.
void require_finite(const Estimate& e, const PlanSources& src);

}  // namespace trainsim
