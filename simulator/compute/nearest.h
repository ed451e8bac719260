// The K nearest of a stream of (distance², index) offers, kept sorted by a short insertion: the
// neighbours the measured-points and grouped-GEMM models interpolate between.
#pragma once

#include <cstddef>
#include <utility>

namespace trainsim {

template <int K>
struct Nearest {
  std::pair<double, size_t> items[K];  // the `count` nearest, ascending distance²
  int count = 0;

  /// Keeps (d2, i) if it is among the K nearest offered so far (ties: the earlier offer first).
  void offer(double d2, size_t i) {
    if (count == K && d2 >= items[count - 1].first) return;
    int slot = count < K ? count++ : count - 1;
    while (slot > 0 && items[slot - 1].first > d2) {
      items[slot] = items[slot - 1];
      --slot;
    }
    items[slot] = {d2, i};
  }
};

}  // namespace trainsim
