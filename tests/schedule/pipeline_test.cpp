// Pipeline replays: hand-computed 1F1B times.
#include "schedule/pipeline.h"

#include <gtest/gtest.h>

namespace trainsim {
namespace {

StagePhases stage(double f, double b, bool first, bool last, double p2p) {
  StagePhases s;
  s.fwd = f;
  s.bwd = b;
  if (!first) s.fwd_recv = s.bwd_send = p2p;
  if (!last) s.fwd_send = s.bwd_recv = p2p;
  return s;
}

TEST(PipelineTest, SingleStageIsMicroBatchesTimesForwardPlusBackward) {
  EXPECT_DOUBLE_EQ(replay_1f1b({stage(1, 2, true, true, 0)}, 5), 15);
}

// Two stages, F = 1, B = 2, free p2p: the classic (mbc + pp − 1)·(F + B) = (4 + 1)·3 = 15.
TEST(PipelineTest, TwoStagesUniformMatchesBubbleFormula) {
  EXPECT_DOUBLE_EQ(replay_1f1b({stage(1, 2, true, false, 0), stage(1, 2, false, true, 0)}, 4), 15);
}

// Blocking p2p of 0.5 per hop: each micro-batch crosses the boundary twice (activation and
// gradient); the replay adds one p2p per crossing on the critical path.
TEST(PipelineTest, TwoStagesWithP2P) {
  // Rank 0: F0 [0,1] send0 [1,1.5]; rank 1 recv0 ends 1.5, F0 [1.5,2.5], B0 [2.5,4.5] ...
  const double t = replay_1f1b({stage(1, 2, true, false, 0.5), stage(1, 2, false, true, 0.5)}, 1);
  EXPECT_DOUBLE_EQ(t, 1 + 0.5 + 1 + 2 + 0.5 + 2);
}

}  // namespace
}  // namespace trainsim
