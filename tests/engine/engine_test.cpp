// The engine: streams, dependencies and rendezvous, hand-computed.
#include "engine/engine.h"

#include <gtest/gtest.h>

namespace trainsim {
namespace {

const Engine::Label kF{StepKind::Forward, 0, 0};

TEST(EngineTest, OneStreamRunsInIssueOrder) {
  Engine e(1);
  for (double d : {1.0, 2.0, 3.0}) e.add(0, Stream::Compute, d, kF);
  const Timeline tl = e.run();
  ASSERT_EQ(tl.events.size(), 3u);
  EXPECT_DOUBLE_EQ(tl.events[1].start, 1);
  EXPECT_DOUBLE_EQ(tl.events[2].end, 6);
}

TEST(EngineTest, StreamsOfOneRankOverlap) {
  Engine e(1);
  e.add(0, Stream::Compute, 2, kF);
  e.add(0, Stream::Dp, 3, {StepKind::DpComm, -1, -1});
  EXPECT_DOUBLE_EQ(e.run().span(), 3);
}

TEST(EngineTest, DependencyAcrossRanks) {
  Engine e(2);
  const auto b = e.add(1, Stream::Compute, 1, kF);  // issued first, must still wait for a
  const auto a = e.add(0, Stream::Compute, 2, kF);
  e.depends(b, a);
  const Timeline tl = e.run();
  EXPECT_DOUBLE_EQ(tl.events[0].start, 2);
  EXPECT_DOUBLE_EQ(tl.events[0].end, 3);
}

// Rank 0 reaches its send at 1, rank 1 its receive at 3: both end at max(1, 3) + 0.5.
TEST(EngineTest, RendezvousEndsTogether) {
  Engine e(2);
  e.add(0, Stream::Compute, 1, kF);
  const auto s0 = e.add(0, Stream::Compute, 0, {StepKind::P2P, 0, 0});
  const auto after = e.add(0, Stream::Compute, 1, kF);
  e.add(1, Stream::Compute, 3, kF);
  const auto s1 = e.add(1, Stream::Compute, 0, {StepKind::P2P, 0, 0});
  e.rendezvous(s0, s1, 0.5);
  const Timeline tl = e.run();
  EXPECT_DOUBLE_EQ(tl.events[static_cast<size_t>(s0)].end, 3.5);
  EXPECT_DOUBLE_EQ(tl.events[static_cast<size_t>(s1)].end, 3.5);
  EXPECT_DOUBLE_EQ(tl.events[static_cast<size_t>(after)].start, 3.5);
  EXPECT_DOUBLE_EQ(tl.rank_end(0), 4.5);
}

TEST(EngineTest, DeadlockIsAnInternalErrorNotAHang) {
  Engine e(2);
  const auto a = e.add(0, Stream::Compute, 1, kF);
  const auto b = e.add(1, Stream::Compute, 1, kF);
  e.depends(a, b);
  e.depends(b, a);
  EXPECT_THROW((void)e.run(), std::exception);
}

// An op with several dependencies and rendezvous waits for all of them, whichever it meets
// first. Rank 0: A [0,2] on compute, C [0,4] on dp. Rank 1: D waits for A's end (2) and for C
// halfway (2), and for E's start on rank 2 (E [0,5]): D ends at max(2 + 1, 5 + 0.5, 2 + 0.25) = 5.5.
// Totals: rank 1's compute stream is busy 3.5 (1 op), its p2p none; rank 0 ends at 4.
TEST(EngineTest, SeveralLinksOnOneOp) {
  Engine e(3);
  const auto a = e.add(0, Stream::Compute, 2, kF);
  const auto c = e.add(0, Stream::Dp, 4, {StepKind::DpComm, -1, -1});
  const auto d = e.add(1, Stream::Compute, 1, kF);
  const auto w = e.add(2, Stream::Compute, 5, kF);
  const auto x = e.add(2, Stream::Compute, 0, {StepKind::P2P, 0, 0});
  e.depends(d, a);
  e.depends_at(d, c, 0.5);
  e.rendezvous(d, x, 0.5);
  e.rendezvous(d, w, 0.25);
  const Timeline tl = e.run();
  EXPECT_DOUBLE_EQ(tl.events[static_cast<size_t>(d)].start, 2);
  EXPECT_DOUBLE_EQ(tl.events[static_cast<size_t>(d)].end, 5.5);
  EXPECT_DOUBLE_EQ(tl.events[static_cast<size_t>(x)].start, 5);
  EXPECT_DOUBLE_EQ(tl.events[static_cast<size_t>(x)].end, 5.5);
  const Timeline totals = e.run(false);
  EXPECT_TRUE(totals.events.empty());
  EXPECT_DOUBLE_EQ(totals.totals[1].compute_busy, 3.5);
  EXPECT_DOUBLE_EQ(totals.totals[1].p2p_blocking, 0);
  EXPECT_DOUBLE_EQ(totals.totals[2].p2p_blocking, 0.5);
  EXPECT_DOUBLE_EQ(totals.totals[2].stream_end[static_cast<size_t>(Stream::Compute)], 5.5);
  EXPECT_DOUBLE_EQ(totals.totals[0].end, 4);
  EXPECT_DOUBLE_EQ(totals.totals[0].stream_busy[static_cast<size_t>(Stream::Dp)], 4);
}

TEST(EngineTest, LinkToAnOpNotAddedIsAnInternalError) {
  Engine e(1);
  const auto a = e.add(0, Stream::Compute, 1, kF);
  EXPECT_THROW(e.depends(a, a + 1), std::exception);
  EXPECT_THROW(e.rendezvous(-1, a, 0), std::exception);
  EXPECT_THROW(e.depends_at(a + 1, a, 0.5), std::exception);
}

// A dependency on an earlier op of the same stream is implied by the stream's order (the engine
// records none); one on a later op of it can never be met.
TEST(EngineTest, DependencyWithinAStream) {
  Engine e(1);
  const auto a = e.add(0, Stream::Compute, 2, kF);
  const auto b = e.add(0, Stream::Compute, 1, kF);
  e.depends(b, a);
  EXPECT_DOUBLE_EQ(e.run().events[static_cast<size_t>(b)].start, 2);
  e.depends(a, b);
  EXPECT_FALSE(e.try_run().has_value());
}

// Ops past any reservation: 1,000 of 0.5 s on one stream end at 500 s, 0.25 s after the
// other stream's op that depends on the 999th.
TEST(EngineTest, GrowsPastItsReservation) {
  Engine e(1);
  e.reserve(4, 1, 0);
  Engine::OpId last = -1;
  for (int i = 0; i < 1000; ++i) last = e.add(0, Stream::Compute, 0.5, kF);
  const auto dp = e.add(0, Stream::Dp, 0.25, {StepKind::DpComm, -1, -1});
  e.depends(dp, last - 1);
  const Timeline tl = e.run(false);
  EXPECT_EQ(e.size(), 1001u);
  EXPECT_DOUBLE_EQ(tl.totals[0].stream_end[static_cast<size_t>(Stream::Compute)], 500);
  EXPECT_DOUBLE_EQ(tl.totals[0].end, 500);
  EXPECT_DOUBLE_EQ(tl.totals[0].stream_end[static_cast<size_t>(Stream::Dp)], 499.75);
}

TEST(EngineTest, OpOnAnUnknownRankIsAnInternalError) {
  Engine e(1);
  EXPECT_THROW(e.add(1, Stream::Compute, 1, kF), std::exception);
  EXPECT_THROW(e.add(-1, Stream::Compute, 1, kF), std::exception);
}

// A system may fit collective times below zero (a negative offset): such an op ends before it
// starts and the stream's next op starts at that end, as issued. The stream ends at its latest
// op end, and a dependency on an earlier op of the same stream still holds: 2 s, then −1 s
// (ends at 1), then 0.5 s after the first (2 to 2.5); alone, the last would run from 1 to 1.5.
TEST(EngineTest, NegativeDurationsReplayAsIssued) {
  Engine e(1);
  const auto a = e.add(0, Stream::Compute, 2, kF);
  e.add(0, Stream::Compute, -1, kF);
  const auto c = e.add(0, Stream::Compute, 0.5, kF);
  e.depends(c, a);
  const Timeline tl = e.run();
  EXPECT_DOUBLE_EQ(tl.events[1].start, 2);
  EXPECT_DOUBLE_EQ(tl.events[1].end, 1);
  EXPECT_DOUBLE_EQ(tl.events[2].start, 2);
  EXPECT_DOUBLE_EQ(tl.events[2].end, 2.5);
  EXPECT_DOUBLE_EQ(tl.totals[0].end, 2.5);
  e.reset(1);
  e.add(0, Stream::Compute, 2, kF);
  e.add(0, Stream::Compute, -1, kF);
  e.add(0, Stream::Compute, 0.5, kF);
  const Timeline alone = e.run();
  EXPECT_DOUBLE_EQ(alone.events[2].start, 1);
  EXPECT_DOUBLE_EQ(alone.events[2].end, 1.5);
  EXPECT_DOUBLE_EQ(alone.totals[0].stream_end[static_cast<size_t>(Stream::Compute)], 2);
  EXPECT_DOUBLE_EQ(alone.totals[0].compute_busy, 1.5);
}

// An op that ends before time 0 has ended: the op depending on it (another stream) and the one
// waiting on it at a rendezvous (another rank) run from 0. A stream ends no earlier than 0.
TEST(EngineTest, OpsEndingBeforeTimeZeroAreDone) {
  Engine e(2);
  const auto a = e.add(0, Stream::Compute, -2, kF);
  const auto b = e.add(0, Stream::Dp, 1, {StepKind::DpComm, -1, -1});
  e.depends(b, a);
  const auto s = e.add(0, Stream::Compute, 0.25, {StepKind::P2P, 0, 0});
  const auto r = e.add(1, Stream::Compute, 0.25, {StepKind::P2P, 0, 0});
  e.rendezvous(s, r, 0.5);
  const Timeline tl = e.run();
  EXPECT_DOUBLE_EQ(tl.events[0].end, -2);
  EXPECT_DOUBLE_EQ(tl.events[1].start, 0);
  EXPECT_DOUBLE_EQ(tl.events[1].end, 1);
  EXPECT_DOUBLE_EQ(tl.events[2].start, -2);
  EXPECT_DOUBLE_EQ(tl.events[2].end, 0.5);  // max(−2, 0) + 0.5
  EXPECT_DOUBLE_EQ(tl.events[3].end, 0.5);
  EXPECT_DOUBLE_EQ(tl.totals[0].stream_end[static_cast<size_t>(Stream::Dp)], 1);
  EXPECT_DOUBLE_EQ(tl.totals[1].end, 0.5);
}

// A replay into a timeline replaces what it held: rank 0's 1 s op after a two-rank program with
// events, then one event and one rank's totals; a cyclic program reports false.
TEST(EngineTest, ReplayIntoATimelineReplacesIt) {
  Engine e(2);
  e.add(0, Stream::Compute, 2, kF);
  e.add(1, Stream::Compute, 3, kF);
  Timeline tl;
  ASSERT_TRUE(e.try_run(tl));
  EXPECT_EQ(tl.events.size(), 2u);
  e.reset(1);
  e.add(0, Stream::Compute, 1, kF);
  ASSERT_TRUE(e.try_run(tl));
  EXPECT_EQ(tl.ranks, 1);
  ASSERT_EQ(tl.events.size(), 1u);
  ASSERT_EQ(tl.totals.size(), 1u);
  EXPECT_DOUBLE_EQ(tl.totals[0].end, 1);
  EXPECT_DOUBLE_EQ(tl.span(), 1);
  const auto b = e.add(0, Stream::Dp, 1, kF);
  e.depends(b, b);
  EXPECT_FALSE(e.try_run(tl, false));
}

}  // namespace
}  // namespace trainsim
