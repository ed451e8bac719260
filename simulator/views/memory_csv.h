// The memory timeline as CSV: per stage, allocated bytes after each op, and what was live at the peak.
#pragma once

#include <cstdint>
#include <string>

#include "estimate/estimate.h"

namespace trainsim {

/// Columns: pp_rank, time_ms, allocated_gib, after (op or step), chunk, micro_batch, peak ("peak"
/// on the stage's peak row), live_at_peak (the chunk/micro-batch activations held there, e.g.
/// "c0/mb0 c0/mb1"). Passes of the first and last `detail` micro-batches op by op, the others one
/// row each (negative: all op by op); the counts come from memory_track (views/step_ops.h). The
/// peak is exact either way: memory only grows in a forward and only shrinks in a backward.
[[nodiscard]] std::string memory_timeline_csv(const Estimate& e, int64_t detail);

}  // namespace trainsim
