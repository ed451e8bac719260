// Which measured grouped-GEMM series a model should not be fitted on: series whose throughput
// falls far below that of a smaller expert shape with the same number of experts
// (docs/calibration.md, "Grouped-GEMM model", the screen).
#pragma once

#include <string>
#include <vector>

#include "compute/grouped_model.h"

namespace trainsim {

/// A GEMM's throughput does not fall when every dimension grows: at the same tokens per expert
/// and expert count, a larger expert shape (hidden and intermediate sizes both at least as
/// large) keeps the tiles of the smaller one's and adds more; with many waves of tiles per SM
/// the tile and wave quantisation that can make a larger GEMM slower per FLOP costs far less
/// than this factor. A series slower per FLOP than a smaller shape's by more than
/// kGroupedScreenRatio was timed on another kernel path of the measuring library (the published
/// fused-MoE tables hold such series: throughput flat at 0.1-0.2 of peak from 256 tokens on
/// while the neighbouring shapes reach 0.5-0.9), not on the grouped GEMM training runs.
inline constexpr double kGroupedScreenRatio = 1.5;
/// Token counts per expert from which the comparison is made: below, a GEMM of E experts is a
/// few waves of tiles and quantisation effects are large.
inline constexpr double kGroupedScreenMinTokens = 256;

struct ScreenedSeries {
  size_t index = 0;    // in the input
  size_t smaller = 0;  // the smaller shape that is faster
  double tokens = 0;   // the token count compared (the largest both measured, >= the minimum)
  double ratio = 0;    // the smaller shape's throughput over this series'
};

/// Series of `series` to set aside, in input order: each with the smaller shape of its expert
/// count (hidden <= and inter <=, not the same shape) whose throughput at their largest common
/// token count >= kGroupedScreenMinTokens is most above its own, when that exceeds
/// kGroupedScreenRatio.
[[nodiscard]] std::vector<ScreenedSeries> screen_grouped_series(const std::vector<GroupedSeries>& series);

}  // namespace trainsim
