// Pipeline layouts on the timeline: chunks of different cost and empty stages in the interleaved
// schedule, and layers (time, memory) moved between ranks.
#include <gtest/gtest.h>

#include "test_estimate.h"
#include "estimate/estimate.h"
#include "plan/plan.h"
#include "test_presets.h"

namespace trainsim {
namespace {

class LayoutTimelineTest : public ::testing::Test {
 protected:
  ModelConfig m_ = test::preset_model("llama3-8b");  // 32 layers
  SystemConfig sys_ = test::preset_system("h100-sxm-80g");
  StrategyConfig s_ = load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 4,
                                        "world_size": 4, "pp_size": 2, "tp_size": 2})", "s.json");

  // Forward events of (rank, chunk), in issue order.
  static std::vector<TimelineEvent> forwards(const Estimate& e, int32_t rank, int32_t chunk) {
    std::vector<TimelineEvent> out;
    for (const auto& ev : e.timeline.events)
      if (ev.kind == StepKind::Forward && ev.rank == rank && ev.chunk == chunk) out.push_back(ev);
    return out;
  }
};

TEST_F(LayoutTimelineTest, UnevenChunksWithEmptyStagesRunInDependencyOrder) {
  // pp 2, v 2: stage 0 (rank 0, chunk 0) only the embedding, stages 1 and 2 sixteen layers each,
  // stage 3 (rank 1, chunk 1) only the output layer and loss.
  s_.pipeline_model_parallel_layout = "E|t*16|t*16|L";
  const Plan p = resolve_plan(m_, s_, sys_, Mode::Default);
  ASSERT_EQ(p.schedule, ScheduleKind::Interleaved);
  const Estimate e = estimate(p, nullptr, true);
  const auto emb = forwards(e, 0, 0), first16 = forwards(e, 1, 0), second16 = forwards(e, 0, 1), loss = forwards(e, 1, 1);
  ASSERT_EQ(emb.size(), 4u);
  ASSERT_EQ(first16.size(), 4u);
  ASSERT_EQ(second16.size(), 4u);
  ASSERT_EQ(loss.size(), 4u);
  const double layers16 = first16[0].end - first16[0].start;
  // Equal chunks cost the same; the embedding-only chunk is a small fraction of 16 layers.
  EXPECT_DOUBLE_EQ(second16[0].end - second16[0].start, layers16);
  EXPECT_LT(emb[0].end - emb[0].start, 0.05 * layers16);
  EXPECT_GT(loss[0].end - loss[0].start, 0.0);
  EXPECT_LT(loss[0].end - loss[0].start, layers16);
  // Micro-batch 0 walks the stages in order 0 → 1 → 2 → 3 (rank 0, 1, 0, 1).
  EXPECT_GE(first16[0].start, emb[0].end);
  EXPECT_GE(second16[0].start, first16[0].end);
  EXPECT_GE(loss[0].start, second16[0].end);

  // The same layers spread evenly take the same compute but a different bubble.
  s_.pipeline_model_parallel_layout = "Et*8|t*8|t*8|t*8L";
  const Estimate even = estimate(m_, s_, sys_);
  EXPECT_NEAR(even.stage_times[0].fwd_compute_s, e.stage_times[0].fwd_compute_s,
              0.1 * e.stage_times[0].fwd_compute_s);
  EXPECT_NE(even.pipeline_s, e.pipeline_s);
}

TEST_F(LayoutTimelineTest, LayoutMovesTimeAndMemoryBetweenStages) {
  // pp 4 without interleaving: the first stage holds 2 layers instead of 8.
  s_.pp_size = 4;
  s_.world_size = 8;
  const Estimate even = estimate(m_, s_, sys_);
  s_.pipeline_model_parallel_layout = "Ett|t*10|t*10|t*10L";
  const Estimate light = estimate(m_, s_, sys_);
  EXPECT_LT(light.stages[0].model_bytes, 0.5 * even.stages[0].model_bytes);
  EXPECT_LT(light.stages[0].peak_alloc_bytes, even.stages[0].peak_alloc_bytes);
  EXPECT_LT(light.stage_times[0].fwd_compute_s, 0.5 * even.stage_times[0].fwd_compute_s);
  EXPECT_GT(light.stage_times[1].fwd_compute_s, even.stage_times[1].fwd_compute_s);
}

}  // namespace
}  // namespace trainsim
