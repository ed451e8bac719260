// Structure of the timing loop: clock warm-up first, the flush outside the events, time per call.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "timing_loop.h"

namespace trainsim::kb {
namespace {

// Records the call sequence; every launch takes `launch_s` of device time.
class RecordingOps : public TimerOps {
 public:
  explicit RecordingOps(double launch_s) : launch_s_(launch_s) {}
  void launch() override {
    log += "L";
    pending_ += launch_s_;
  }
  void flush() override { log += "F"; }
  void record_start() override {
    log += "[";
    pending_ = 0;
  }
  void record_stop() override { log += "]"; }
  double elapsed_s() override { return pending_; }
  void sampled() override { log += "S"; }
  std::string log;

 private:
  double launch_s_, pending_ = 0;
};

TEST(KbTimingLoopTest, WarmsUpForMinimumDeviceTimeThenFlushesOutsideTheEvents) {
  // L launch, F flush, [ ] events, S clock read after a timed sample.
  // 40 ms per launch, warm-up batches of 2 then 4: 0.08 s + 0.16 s >= 0.2 s.
  RecordingOps ops(0.04);
  TimingLoopOptions opt;
  opt.warmup = 2;
  opt.samples = 2;
  opt.min_warmup_s = 0.2;
  std::vector<double> s = run_timing_loop(ops, opt);
  EXPECT_EQ(ops.log, "[LL][LLLL]F[L]SF[L]S");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_DOUBLE_EQ(s[0], 0.04);
}

TEST(KbTimingLoopTest, ShortKernelsStopWarmingAtTheLaunchCapAndDividePerCall) {
  RecordingOps ops(1e-6);
  TimingLoopOptions opt;
  opt.warmup = 1;
  opt.samples = 1;
  opt.calls_per_sample = 3;
  opt.cold = false;
  opt.max_warmup_launches = 10;
  std::vector<double> s = run_timing_loop(ops, opt);
  // Batches of 3, 6 (9 launched, below the cap of 10), then 12.
  EXPECT_EQ(ops.log, "[LLL][LLLLLL][LLLLLLLLLLLL][LLL]S");
  EXPECT_DOUBLE_EQ(s[0], 1e-6);
}

TEST(KbTimingLoopTest, FlushReadsAtLeastTwiceTheL2) {
  EXPECT_EQ(l2_flush_bytes(50u << 20), 100u << 20);                   // H100: 50 MiB L2
  EXPECT_EQ(l2_flush_bytes(6u << 20), 64u << 20);                     // small L2: 64 MiB floor
  EXPECT_EQ(l2_flush_bytes((40u << 20) + 1), (80u << 20) + (1u << 20));  // rounded up to 1 MiB
}

}  // namespace
}  // namespace trainsim::kb
