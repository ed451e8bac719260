// Timing loop.
#include "timing_loop.h"

#include <algorithm>

#include "core/error.h"

namespace trainsim::kb {

std::vector<double> run_timing_loop(TimerOps& ops, const TimingLoopOptions& opt) {
  if (opt.samples < 1 || opt.calls_per_sample < 1)
    throw Error("timing loop: samples and calls_per_sample must be ≥ 1");
  const int first = std::max(opt.warmup, 1) * opt.calls_per_sample;
  double warm_s = 0;
  int launched = 0;
  // Batches double so that short kernels keep the GPU busy instead of waiting on syncs.
  for (int batch = first; launched < first || (warm_s < opt.min_warmup_s && launched < opt.max_warmup_launches);
       batch *= 2) {
    ops.record_start();
    for (int c = 0; c < batch; ++c) ops.launch();
    ops.record_stop();
    warm_s += ops.elapsed_s();
    launched += batch;
  }
  std::vector<double> out;
  out.reserve(static_cast<size_t>(opt.samples));
  for (int i = 0; i < opt.samples; ++i) {
    // The flush is enqueued before the start event, so it is not timed.
    if (opt.cold) ops.flush();
    ops.record_start();
    for (int c = 0; c < opt.calls_per_sample; ++c) ops.launch();
    ops.record_stop();
    out.push_back(ops.elapsed_s() / opt.calls_per_sample);
    ops.sampled();
  }
  return out;
}

size_t l2_flush_bytes(size_t l2_bytes) {
  constexpr size_t kMiB = size_t{1} << 20;
  size_t b = std::max(2 * l2_bytes, 64 * kMiB);
  return (b + kMiB - 1) / kMiB * kMiB;
}

}  // namespace trainsim::kb
