// The host stream on lowered programs: hand-computed step times (milliseconds as units) for a
// host-bound step, the same step with CUDA graphs (device-bound), the loss read and a forward
// with a sync point.
#include "schedule/host_lowering.h"

#include <gtest/gtest.h>

#include "schedule/program.h"

namespace trainsim {
namespace {

PipelineCosts one_stage(double host_fwd, double host_bwd) {
  PipelineCosts c;
  ChunkTimes t;
  t.fwd = 1;
  t.bwd = 2;
  t.host_fwd = host_fwd;
  t.host_bwd = host_bwd;
  c.chunks = {{t}};
  c.host = true;
  c.launch = 0.01;
  c.sync = 0.01;
  return c;
}

Timeline replay(const Program& p, const PipelineCosts& c) {
  Engine e = lower(p, c, P2PMode::Async);
  add_host_stream(e, c);
  return e.run();
}

TEST(HostLowering, IssueFraction) {
  EXPECT_DOUBLE_EQ(host_issue_fraction(3, 1, 0.01), 2.0 / 3);  // host-bound: start 2 into the host op
  EXPECT_DOUBLE_EQ(host_issue_fraction(1, 2, 0.01), 0.01);      // device-bound: the first launch
  EXPECT_DOUBLE_EQ(host_issue_fraction(0.005, 2, 0.01), 1);     // at most the host op's end
  EXPECT_DOUBLE_EQ(host_issue_fraction(0, 2, 0.01), 1);
}

// F = 1, B = 2, host 3 and 1, launch 0.01, four micro-batches. Host: F0 [0,3] B0 [3,4] F1 [4,7]
// ... B3 [15,16]. Device: F0 starts at 3 − 1 = 2 (ends with its last launch, 3), B0 at
// 3 + 0.01 ends 5.01, F1 at max(5.01, 4 + 2) = 6 ends 7, ... B3 [15.01, 17.01]: host-bound,
// 17.01 against the device's 12. With graphs (host 0.01 per pass) the device runs back to back
// from the first launch: 0.01 + 4·3 = 12.01.
TEST(HostLowering, HostBoundWithoutGraphsDeviceBoundWith) {
  const Program p = one_f_one_b(1, 4);
  const Timeline eager = replay(p, one_stage(3, 1));
  EXPECT_NEAR(eager.span(), 17.01, 1e-9);
  EXPECT_NEAR(eager.totals[0].stream_busy[static_cast<size_t>(Stream::Host)], 16, 1e-9);
  EXPECT_NEAR(eager.totals[0].stream_end[static_cast<size_t>(Stream::Host)], 16, 1e-9);
  // The device idles while the host launches: the first forward starts at 2.
  for (const TimelineEvent& ev : eager.events)
    if (ev.stream == Stream::Compute && ev.kind == StepKind::Forward && ev.mb == 0) {
      EXPECT_NEAR(ev.start, 2, 1e-12);
    }
  const Timeline graphed = replay(p, one_stage(0.01, 0.01));
  EXPECT_NEAR(graphed.span(), 12.01, 1e-9);
  // No host model: the device alone.
  PipelineCosts off = one_stage(3, 1);
  off.host = false;
  EXPECT_NEAR(replay(p, off).span(), 12, 1e-12);
}

// The loss read after each forward (the head's chunk): the host waits for the forward's end and
// reads for 0.01; the backward's launch follows (0.01), so each micro-batch adds 0.02 to the
// device's 3: 0.01 + 4·3.02 = 12.09.
TEST(HostLowering, LossReadExposesTheLaunch) {
  PipelineCosts c = one_stage(0.01, 0.01);
  c.chunks[0][0].loss_sync = true;
  EXPECT_NEAR(replay(one_f_one_b(1, 4), c).span(), 12.09, 1e-9);
}

// A forward with a sync point 0.4 into its (synced) device time of 1: host 0.1 before it and 0.5
// after. F starts at the first launch 0.01 and ends 1.01; the host's rest starts when the device
// reaches the sync, 0.01 + 0.4 = 0.41, and ends 0.91; B (host 0.2) starts at 1.01, ends 2.01.
TEST(HostLowering, SyncedForwardWaitsForTheDevice) {
  PipelineCosts c = one_stage(0.6, 0.2);
  c.chunks[0][0].bwd = 1;
  c.chunks[0][0].fwd_first = 0.4;
  c.chunks[0][0].host_fwd_first = 0.1;
  const Timeline t = replay(one_f_one_b(1, 1), c);
  EXPECT_NEAR(t.span(), 2.01, 1e-12);
  std::vector<std::pair<double, double>> host;
  for (const TimelineEvent& ev : t.events)
    if (ev.stream == Stream::Host) host.emplace_back(ev.start, ev.end);
  ASSERT_EQ(host.size(), 3u);
  EXPECT_NEAR(host[1].first, 0.41, 1e-12);
  EXPECT_NEAR(host[1].second, 0.91, 1e-12);
  EXPECT_NEAR(host[2].first, 0.91, 1e-12);
}

// Blocking p2p (Megatron's batch_p2p_sync): the transfers wait for the host to get there, and
// the host waits for them (issue and synchronize: one host op of 0.02 + 0.01 after them) before it
// launches the next pass. Two stages, one micro-batch, F = 1, B = 2, p2p 0.5, host per pass 0.01,
// launch 0.01. Stage 0: F0 [0.01, 1.01], its send meets stage 1's receive (posted at 0):
// [1.01, 1.51]; stage 1's host reads until 1.54, launches F0 [1.54, 1.55] and B0 [1.55, 1.56];
// F0 runs [1.55, 2.55], B0 [2.55, 4.55]; its send meets stage 0's receive: [4.55, 5.05]. Stage
// 0's host reads until 5.08 and launches B0 [5.08, 5.09], which runs [5.09, 7.09].
TEST(HostLowering, BlockingP2PWaitsOnTheHost) {
  PipelineCosts c = one_stage(0.01, 0.01);
  c.chunks = {{c.chunks[0][0]}, {c.chunks[0][0]}};
  c.p2p = 0.5;
  c.p2p_host = 0.02;
  Engine e = lower(one_f_one_b(2, 1), c, P2PMode::Blocking);
  const size_t before = e.size();
  add_host_stream(e, c);
  // Stage 0: two passes and one bundle (send, then receive); stage 1: two passes, two bundles.
  EXPECT_EQ(e.size() - before, 7u);
  // Without the host: 7 (LowerTest.TwoStagesWithP2P).
  EXPECT_NEAR(e.run().span(), 7.09, 1e-9);
}

}  // namespace
}  // namespace trainsim
