// Chrome trace-event JSON of an estimate (opens in Perfetto and chrome://tracing): one process
// per pipeline stage, one thread per stream (compute, each collective group, pipeline p2p, data
// parallel), one complete event per op, and a counter track of allocated memory per stage.
#pragma once

#include <cstdint>
#include <string>

#include "estimate/estimate.h"

namespace trainsim {

struct TraceOptions {
  /// Micro-batches drawn op by op at each end of the step; the steady-state ones between them are
  /// one event per pass. Negative: every micro-batch op by op.
  int64_t detail_micro_batches = 2;
};

struct TraceStats {
  size_t events = 0;            // trace events written (metadata included)
  int64_t aggregated_steps = 0; // passes drawn as one event instead of their ops
};

/// The trace document. Times are microseconds from the start of the step; its span is the
/// predicted step time. Needs an estimate made with events recorded.
[[nodiscard]] std::string trace_json(const Estimate& e, const TraceOptions& opt = {}, TraceStats* stats = nullptr);

}  // namespace trainsim
