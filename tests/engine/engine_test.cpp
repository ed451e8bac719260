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

}  // namespace
}  // namespace trainsim
