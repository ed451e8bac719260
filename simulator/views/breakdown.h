// Where a stage's time goes: its op costs summed per op and per layer type over the iteration.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "estimate/estimate.h"

namespace trainsim {

/// One row: an op (or every op of a layer type) on one stage, summed over its instances, its
/// virtual chunks and the micro-batches of the iteration (seconds, FLOPs, bytes).
struct BreakdownRow {
  std::string layer_type;  // "embedding", "dense_layer", "moe_layer", "head"
  std::string op;          // leaf name; empty for a layer-type row
  int64_t instances = 0;   // per micro-batch: layers (layer-type rows) or op instances (op rows)
  double fwd_s = 0, bwd_s = 0, recompute_s = 0;  // kernels
  double comm_s = 0;                             // collectives on the compute stream (all exposed)
  double flops = 0, bytes = 0;    // recompute included
  double fwd_bwd_flops = 0;       // forward and backward FLOPs, what `efficiency` averages over
  double efficiency = 0;   // FLOP-weighted FLOP efficiency (0: no FLOPs)
  bool measured = false;   // every keyed kernel used a measured efficiency (or a model's)
  EfficiencySource source = EfficiencySource::Default;  // the least direct of them
  [[nodiscard]] double total_s() const { return fwd_s + bwd_s + recompute_s + comm_s; }
};

struct StageBreakdown {
  int32_t rank = 0;
  std::vector<BreakdownRow> by_layer_type;  // in call order
  std::vector<BreakdownRow> by_op;          // by time, largest first
};

/// Breakdowns of every pipeline stage (empty when the estimate has no rank profiles).
[[nodiscard]] std::vector<StageBreakdown> stage_breakdowns(const Estimate& e);

enum class BreakdownLevel { Layer, Op };
/// "layer" or "op"; UsageError naming `flag` otherwise.
[[nodiscard]] BreakdownLevel parse_breakdown_level(const std::string& value, const std::string& flag);
/// The summary's table of one level, per stage (milliseconds, TFLOP, GB).
[[nodiscard]] std::string breakdown_table(const Estimate& e, BreakdownLevel level);
/// The same rows as CSV for a spreadsheet: a header, then one row per stage and op (or layer
/// type), in full precision (ms, TFLOP, GB).
[[nodiscard]] std::string breakdown_csv(const Estimate& e, BreakdownLevel level);

}  // namespace trainsim
