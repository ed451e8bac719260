// Gradient buckets, progress dependencies and the GEMM/collective overlap of tp_comm_overlap.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "schedule/gemm_comm_overlap.h"
#include "schedule/grad_buckets.h"

namespace trainsim {
namespace {

TEST(GradBucketsTest, DefaultSizeIsMegatrons) {
  EXPECT_DOUBLE_EQ(default_bucket_params(8), 40e6);     // max(40M, 8M)
  EXPECT_DOUBLE_EQ(default_bucket_params(64), 64e6);    // max(40M, 64M)
}

TEST(GradBucketsTest, ReadyPointsInterpolateWithinSegments) {
  // Backward order: head 20M params in 1 s, a layer 100M params in 4 s; total 5 s.
  // 50M buckets: bucket 0 ends at 50M = head + 30M of the layer → 1 + 4·30/100 = 2.2 s → 0.44;
  // bucket 1 ends at 100M → 1 + 4·80/100 = 4.2 s → 0.84; bucket 2 holds the remaining 20M,
  // ready at 5 s → 1.
  const auto b = grad_buckets({{20e6, 1}, {100e6, 4}}, 50e6);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_DOUBLE_EQ(b[0].params, 50e6);
  EXPECT_NEAR(b[0].ready, 0.44, 1e-12);
  EXPECT_NEAR(b[1].ready, 0.84, 1e-12);
  EXPECT_DOUBLE_EQ(b[2].params, 20e6);
  EXPECT_DOUBLE_EQ(b[2].ready, 1.0);
}

TEST(GradBucketsTest, SegmentsWithoutParametersOnlyTakeTime) {
  // A parameter-free 1 s (loss) before a 10M-param 1 s layer: the single bucket is ready at 2/2.
  // A 10M-param 1 s layer before a parameter-free 3 s piece: ready at 1/4 = 0.25.
  EXPECT_DOUBLE_EQ(grad_buckets({{0, 1}, {10e6, 1}}, 40e6).at(0).ready, 1.0);
  EXPECT_DOUBLE_EQ(grad_buckets({{10e6, 1}, {0, 3}}, 40e6).at(0).ready, 0.25);
  EXPECT_TRUE(grad_buckets({{0, 1}}, 40e6).empty());
}

// A segment of negative time (a collective a system fits below zero): the backward takes
// −3 + 2 + 2 = 1 s; the first 10M-param bucket's last gradient at −3 + 2 = −1 s is ready at the
// start (0, not −1: once an internal error in the engine), the second at 1 s.
TEST(GradBucketsTest, ReadyPointsStayWithinTheBackward) {
  const auto b = grad_buckets({{0, -3}, {10e6, 2}, {10e6, 2}}, 10e6);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_DOUBLE_EQ(b[0].ready, 0.0);
  EXPECT_DOUBLE_EQ(b[1].ready, 1.0);
  EXPECT_DOUBLE_EQ(grad_buckets({{10e6, -1}}, 10e6).at(0).ready, 1.0);
}

TEST(EngineTest, DependsAtStartsPartWayThrough) {
  // Compute op [0, 4]; a dp op depending on 25 % of it starts at 1 and ends at 3.
  Engine e(1);
  const auto c = e.add(0, Stream::Compute, 4, {StepKind::Backward, 0, 0});
  const auto d = e.add(0, Stream::Dp, 2, {StepKind::DpComm, -1, -1});
  e.depends_at(d, c, 0.25);
  const Timeline t = e.run();
  EXPECT_DOUBLE_EQ(t.events[1].start, 1.0);
  EXPECT_DOUBLE_EQ(t.totals[0].stream_end[static_cast<size_t>(Stream::Dp)], 3.0);
  EXPECT_DOUBLE_EQ(t.totals[0].stream_end[static_cast<size_t>(Stream::Compute)], 4.0);
}

TEST(GemmCommOverlapTest, PipelinedAllGatherExposesItsFirstChunk) {
  // GEMM 4 s, all-gather 2 s, 4 chunks: AG chunks of 0.5 s, GEMM chunks of 1 s; GEMM i waits for
  // AG i, so the GEMMs run 0.5–4.5 s: 4.5 s = GEMM + one AG chunk.
  EXPECT_NEAR(overlapped_time(OverlapKind::AllGatherThenGemm, 4, 2, 4, 0), 4.5, 1e-12);
  // Communication-bound: GEMM 1 s, AG 4 s: AG chunks end at 1, 2, 3, 4; the last GEMM chunk
  // (0.25 s) follows: 4.25 s.
  EXPECT_NEAR(overlapped_time(OverlapKind::AllGatherThenGemm, 1, 4, 4, 0), 4.25, 1e-12);
}

TEST(GemmCommOverlapTest, PipelinedReduceScatterExposesItsLastChunk) {
  // GEMM 4 s with a 10 % slow-down = 4.4 s in chunks of 1.1 s; RS 2 s in chunks of 0.5 s: the last
  // RS chunk follows the last GEMM chunk: 4.4 + 0.5 = 4.9 s.
  EXPECT_NEAR(overlapped_time(OverlapKind::GemmThenReduceScatter, 4, 2, 4, 0.1), 4.9, 1e-12);
}

TEST(GemmCommOverlapTest, BulkOverlapIsTheLongerOfTheTwo) {
  EXPECT_NEAR(overlapped_time(OverlapKind::Bulk, 3, 2, 8, 0), 3.0, 1e-12);
  EXPECT_NEAR(overlapped_time(OverlapKind::Bulk, 1, 2, 8, 0.5), 2.0, 1e-12);
}

}  // namespace
}  // namespace trainsim
