// Programs lowered onto the engine: hand-computed step times, blocking and asynchronous p2p.
#include "schedule/lower.h"

#include <gtest/gtest.h>

#include <map>
#include <tuple>

namespace trainsim {
namespace {

PipelineCosts uniform(int64_t pp, int64_t v, double f, double b, double w, double p2p) {
  PipelineCosts c;
  c.chunks.assign(static_cast<size_t>(pp), std::vector<ChunkTimes>(static_cast<size_t>(v), ChunkTimes{f, b, w}));
  c.p2p = p2p;
  return c;
}

double span(const Program& p, const PipelineCosts& c, P2PMode mode) { return lower(p, c, mode).run().span(); }

TEST(LowerTest, SingleStageIsMicroBatchesTimesForwardPlusBackward) {
  EXPECT_DOUBLE_EQ(span(one_f_one_b(1, 5), uniform(1, 1, 1, 2, 0, 0), P2PMode::Blocking), 15);
}

// Two stages, F = 1, B = 2, free p2p: the classic (mbc + pp − 1)·(F + B) = (4 + 1)·3 = 15.
TEST(LowerTest, TwoStagesUniformMatchesBubbleFormula) {
  EXPECT_DOUBLE_EQ(span(one_f_one_b(2, 4), uniform(2, 1, 1, 2, 0, 0), P2PMode::Blocking), 15);
  EXPECT_DOUBLE_EQ(span(one_f_one_b(2, 4), uniform(2, 1, 1, 2, 0, 0), P2PMode::Async), 15);
}

// p2p of 0.5 per hop, one micro-batch: F0 [0,1], send [1,1.5], F0 [1.5,2.5], B0 [2.5,4.5],
// send [4.5,5], B0 [5,7].
TEST(LowerTest, TwoStagesWithP2P) {
  EXPECT_DOUBLE_EQ(span(one_f_one_b(2, 1), uniform(2, 1, 1, 2, 0, 0.5), P2PMode::Blocking), 7);
  EXPECT_DOUBLE_EQ(span(one_f_one_b(2, 1), uniform(2, 1, 1, 2, 0, 0.5), P2PMode::Async), 7);
}

// ZB-H1 with F = B = W = 1 on 2 stages and 2 micro-batches: 7, against 1F1B's 9 with the same
// work (B + W = 2): the bubble shrinks from (p−1)(F+B+W) = 3 to (p−1)(F+B−W) = 1 (Qi et al.).
TEST(LowerTest, ZeroBubbleH1ShrinksTheBubble) {
  EXPECT_DOUBLE_EQ(span(one_f_one_b(2, 2), uniform(2, 1, 1, 2, 0, 0), P2PMode::Blocking), 9);
  EXPECT_DOUBLE_EQ(span(zero_bubble_h1(2, 2), uniform(2, 1, 1, 1, 1, 0), P2PMode::Async), 7);
  EXPECT_FALSE(blocking_problem(zero_bubble_h1(2, 2)).empty());
}

// Interleaved pp 2 × v 2, 2 micro-batches, asynchronous free p2p, chunks of different cost (as a
// pipeline layout makes them): virtual stages 0..3 = (r0,c0) F1 B1, (r1,c0) F2 B4, (r0,c1) F2 B4,
// (r1,c1) F1 B1. Rank 0 runs its 4 warm-up forwards then the backwards; rank 1 runs F F F B F B
// B B (Megatron's table, group 2).
//   r0: F0m0 [0,1] F0m1 [1,2]  F2m0 [3,5] F2m1 [5,7]  B2m0 [7,11] B2m1 [11,15] B0m0 [15,16] B0m1 [19,20]
//   r1: F1m0 [1,3] F1m1 [3,5]  F3m0 [5,6] B3m0 [6,7]  F3m1 [7,8]  B3m1 [8,9]   B1m0 [11,15] B1m1 [15,19]
TEST(LowerTest, InterleavedChunksOfDifferentCost) {
  PipelineCosts c = uniform(2, 2, 0, 0, 0, 0);
  c.chunks[0][0] = {1, 1, 0};
  c.chunks[1][0] = {2, 4, 0};
  c.chunks[0][1] = {2, 4, 0};
  c.chunks[1][1] = {1, 1, 0};
  const Timeline tl = lower(interleaved(2, 2, 2, 2), c, P2PMode::Async).run();
  EXPECT_DOUBLE_EQ(tl.span(), 20);
  EXPECT_DOUBLE_EQ(tl.busy(0, StepKind::Forward), 6);
  EXPECT_DOUBLE_EQ(tl.busy(1, StepKind::Backward), 10);
  int checked = 0;
  for (const auto& e : tl.events) {
    if (e.rank == 1 && e.chunk == 0 && e.mb == 1 && e.kind == StepKind::Backward) {
      EXPECT_DOUBLE_EQ(e.start, 15);  // waits for B2m1 on rank 0
      EXPECT_DOUBLE_EQ(e.end, 19);
      ++checked;
    }
    if (e.rank == 0 && e.chunk == 1 && e.mb == 0 && e.kind == StepKind::Forward) {
      EXPECT_DOUBLE_EQ(e.start, 3);  // waits for F1m0 on rank 1
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2);
}

// Every asynchronous interleaved program with full groups (Megatron: pp ≤ group ≤ mbc)
// finishes, and each step starts only after its input arrived: forward of virtual stage s
// after forward of s−1 plus the transfer; backward of s after backward of s+1 plus the
// transfer (or its own forward on the last virtual stage). Partial last groups may not finish
// (resolve_plan reports them); those that do obey the same rules.
TEST(LowerTest, AsyncInterleavedHonoursDataDependencies) {
  int partial_stuck = 0;
  for (int64_t pp : {2, 3, 4, 8})
    for (int64_t v : {2, 3, 4})
      for (int64_t mbc = pp; mbc <= 2 * pp + 3; ++mbc)
        for (int64_t group = pp; group <= mbc; ++group) {
          const Program p = interleaved(pp, v, mbc, group);
          const double p2p = 0.25;
          const std::optional<Timeline> run = lower(p, uniform(pp, v, 1, 2, 0, p2p), P2PMode::Async).try_run();
          if (mbc % group == 0) {
            ASSERT_TRUE(run.has_value()) << pp << " " << v << " " << mbc << " " << group;
          }
          if (!run) {
            ++partial_stuck;
            continue;
          }
          const Timeline& tl = *run;
          std::map<std::tuple<int64_t, int, bool>, std::pair<double, double>> at;  // (vs, mb, fwd?)
          for (const auto& e : tl.events) {
            if (e.kind != StepKind::Forward && e.kind != StepKind::Backward) continue;
            at[{e.chunk * pp + e.rank, e.mb, e.kind == StepKind::Forward}] = {e.start, e.end};
          }
          ASSERT_EQ(at.size(), static_cast<size_t>(2 * pp * v * mbc)) << pp << " " << v << " " << mbc;
          const int64_t stages = pp * v;
          auto end_of = [&](int64_t vs, int mb, bool fwd) { return at[std::make_tuple(vs, mb, fwd)].second; };
          for (const auto& [k, t] : at) {
            const auto [vs, mb, fwd] = k;
            double ready = 0;
            if (fwd && vs > 0) ready = end_of(vs - 1, mb, true) + p2p;
            if (!fwd && vs + 1 < stages) ready = end_of(vs + 1, mb, false) + p2p;
            if (!fwd && vs + 1 == stages) ready = end_of(vs, mb, true);
            EXPECT_GE(t.first + 1e-12, ready);
          }
        }
  // e.g. pp 4, v 3, 5 micro-batches in groups of 4.
  EXPECT_GT(partial_stuck, 0);
}

// Megatron's synchronous bundles pair for the schedules the peer replays (mbc a multiple of
// pp); otherwise the problem is reported in words, never asserted.
TEST(LowerTest, BlockingInterleavedPairing) {
  EXPECT_EQ(blocking_problem(interleaved(4, 2, 8, 4)), "");
  EXPECT_GT(span(interleaved(4, 2, 8, 4), uniform(4, 2, 1, 2, 0, 0.1), P2PMode::Blocking), 0);
  const std::string why = blocking_problem(interleaved(4, 2, 5, 4));
  EXPECT_NE(why.find("sends but"), std::string::npos) << why;
  EXPECT_GT(span(interleaved(4, 2, 5, 4), uniform(4, 2, 1, 2, 0, 0.1), P2PMode::Async), 0);
}

// One engine lowered into again and again (as the estimate's replays do) holds only the last
// program: the same spans as fresh engines, 15 (blocking 1F1B) and 20 (the interleaved case above).
TEST(LowerTest, LoweringIntoAnEngineReplacesItsProgram) {
  Engine e(3);
  StepOps steps;
  PipelineCosts c = uniform(2, 2, 0, 0, 0, 0);
  c.chunks[0][0] = {1, 1, 0};
  c.chunks[1][0] = {2, 4, 0};
  c.chunks[0][1] = {2, 4, 0};
  c.chunks[1][1] = {1, 1, 0};
  lower(interleaved(2, 2, 2, 2), c, P2PMode::Async, e, &steps);
  EXPECT_DOUBLE_EQ(e.run().span(), 20);
  lower(one_f_one_b(2, 4), uniform(2, 1, 1, 2, 0, 0), P2PMode::Blocking, e, &steps);
  EXPECT_EQ(e.ranks(), 2);
  EXPECT_EQ(e.size(), 2u * 8 + 2u * 8);  // 8 passes and 8 transfers per rank
  EXPECT_DOUBLE_EQ(e.run().span(), 15);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].size(), 8u);
  lower(interleaved(2, 2, 2, 2), c, P2PMode::Async, e, &steps);
  EXPECT_DOUBLE_EQ(e.run().span(), 20);
}

}  // namespace
}  // namespace trainsim
