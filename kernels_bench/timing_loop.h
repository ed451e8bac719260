// The timing loop of kernels_bench as plain C++ over a small device interface, so that its
// structure (clock warm-up, untimed L2 flush, events around each sample) is tested on a CPU.
#pragma once

#include <cstddef>
#include <vector>

namespace trainsim::kb {

/// What the loop needs from a device; the CUDA backend implements it with a stream and two
/// events, tests with a recording fake.
class TimerOps {
 public:
  virtual ~TimerOps() = default;
  /// Enqueues the measured work once.
  virtual void launch() = 0;
  /// Enqueues the L2 flush (see l2_flush_bytes).
  virtual void flush() = 0;
  virtual void record_start() = 0;
  virtual void record_stop() = 0;
  /// Waits for the stop event; returns the seconds between the start and stop events.
  virtual double elapsed_s() = 0;
  /// Called after each timed sample (not after warm-up batches), e.g. to read the SM clock.
  virtual void sampled() = 0;
};

struct TimingLoopOptions {
  int warmup = 5;            // untimed launches, at least
  int samples = 20;          // timed samples
  int calls_per_sample = 1;  // launches between one pair of events (time per call = total / calls)
  bool cold = true;          // flush L2 before each sample (outside the events)
  // GPUs boost from an idle clock within tens of ms; the warm-up keeps launching (in timed
  // batches) until this much device time has passed, so sample 1 runs at the working clock.
  double min_warmup_s = 0.2;
  int max_warmup_launches = 100000;  // bound for kernels too short to reach min_warmup_s
};

/// Seconds per call of each sample. Warm-up: batches between events, the first of
/// max(warmup, 1) x calls_per_sample launches, then doubling, until min_warmup_s of device time
/// or max_warmup_launches.
/// Then per sample: flush (when cold), start event, calls_per_sample launches, stop event,
/// elapsed_s, sampled.
[[nodiscard]] std::vector<double> run_timing_loop(TimerOps& ops, const TimingLoopOptions& opt);

/// Size of the L2 flush buffer for an L2 of `l2_bytes`: at least twice the L2 and 64 MiB,
/// rounded up to 1 MiB. The flush *reads* the buffer: a write (memset) would leave the L2
/// full of dirty lines whose write-back the next timed kernel pays for (2-6 % bias on
/// memory-bound kernels); read lines are clean and are dropped for free.
[[nodiscard]] size_t l2_flush_bytes(size_t l2_bytes);

}  // namespace trainsim::kb
