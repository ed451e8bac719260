// Axis ticks for the SVG plots: round steps (1, 2 or 5 × 10^k) covering a range, and their labels.
#pragma once

#include <string>
#include <vector>

namespace trainsim {

struct Ticks {
  double lo = 0, hi = 1, step = 1;  // the axis spans [lo, hi], a tick every `step`
  std::vector<double> values;       // lo, lo + step, …, hi
  int decimals = 0;                 // digits after the point the labels need
};

/// About `target` ticks with a round step covering [lo, hi] (lo ≤ hi; an empty range is widened
/// to one step). E.g. [0, 3936.1] → 0, 1000, …, 4000; [15076, 30151] → 15000, 20000, …, 35000.
[[nodiscard]] Ticks nice_ticks(double lo, double hi, int target = 5);

/// A tick's label with the axis's decimals ("1000", "0.5").
[[nodiscard]] std::string tick_label(const Ticks& t, double v);

}  // namespace trainsim
