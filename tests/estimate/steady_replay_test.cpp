// The steady-state replay (PipelineReplay::Steady): the pipeline totals extrapolated from three
// short replays equal those of the replay of every micro-batch, and its cost does not grow with
// the micro-batch count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>
#include <string>

#include "test_estimate.h"
#include "core/error.h"
#include "estimate/estimate.h"
#include "plan/plan.h"
#include "test_presets.h"

namespace trainsim {
namespace {

using test::preset_model;
using test::preset_system;

const PlanSources kSrc{"m.json", "s.json", "y.json"};

class SteadyReplayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_ = preset_model("llama3-8b");
    m_.layer_num = 8;
    m_.vocab_size = 256;
    sys_ = preset_system("h100-sxm-80g");
    // The replay machinery without the host stream (HostStreamExtrapolates has it).
    host_sys_ = sys_;
    sys_.host_framework.reset();
  }
  Plan plan(const std::string& extra, int64_t mbc, int64_t pp = 4, Mode mode = Mode::Default) {
    return plan_of(m_, R"({"seq_len": 4096, "micro_batch_size": 1, "enable_recompute": false, "world_size": )" +
                           std::to_string(2 * pp) + R"(, "pp_size": )" + std::to_string(pp) + R"(, "micro_batch_num": )" + std::to_string(mbc) + extra + "}",
                   mode);
  }
  // The plan points at its strategy: kept here.
  Plan plan_of(const ModelConfig& m, const std::string& json, Mode mode = Mode::Default) {
    return resolve_plan(m, strategies_.emplace_back(load_strategy(json, "s.json")), sys_, mode, kSrc);
  }
  ModelConfig m_;
  SystemConfig sys_, host_sys_;
  std::deque<StrategyConfig> strategies_;
};

// Within 1e-9 of the larger, or of `scale` for differences of the replayed times (idle, bubble).
void expect_near(double a, double b, const char* what, double scale = 0) {
  EXPECT_NEAR(a, b, 1e-9 * std::max({std::abs(a), std::abs(b), scale})) << what;
}

// Matches the full replay on every reported time; true when it extrapolated (replayed other
// programs than the plan's), which it must unless `may_fall_back`.
bool expect_same(const Plan& p, bool may_fall_back = false) {
  const Estimate full = estimate(p, nullptr, false, PipelineReplay::Full);
  const Estimate fast = estimate(p, nullptr, false, PipelineReplay::Steady);
  const bool extrapolated = fast.engine_ops != full.engine_ops;
  EXPECT_TRUE(extrapolated || may_fall_back);
  const double scale = full.pipeline_s;
  expect_near(fast.iteration_time_s, full.iteration_time_s, "step time");
  expect_near(fast.pipeline_s, full.pipeline_s, "pipeline");
  EXPECT_EQ(fast.stage_times.size(), full.stage_times.size());
  for (size_t i = 0; i < std::min(fast.stage_times.size(), full.stage_times.size()); ++i) {
    const StageTime& a = fast.stage_times[i];
    const StageTime& b = full.stage_times[i];
    expect_near(a.bubble_s, b.bubble_s, "bubble", scale);
    expect_near(a.total_s, b.total_s, "stage total");
    expect_near(a.idle_s, b.idle_s, "idle", scale);
    expect_near(a.p2p_wait_s, b.p2p_wait_s, "p2p wait", scale);
    expect_near(a.dp_comm_s, b.dp_comm_s, "dp comm");
    for (size_t g = 0; g < a.comm_by_group_s.size(); ++g) expect_near(a.exposed_comm_s(g), b.exposed_comm_s(g), "exposed", scale);
  }
  EXPECT_EQ(fast.timeline.totals.size(), full.timeline.totals.size());
  for (size_t r = 0; r < std::min(fast.timeline.totals.size(), full.timeline.totals.size()); ++r)
    expect_near(fast.timeline.totals[r].end, full.timeline.totals[r].end, "rank end");
  EXPECT_EQ(fast.stages.size(), full.stages.size());
  for (size_t i = 0; i < std::min(fast.stages.size(), full.stages.size()); ++i) {
    EXPECT_EQ(fast.stages[i].in_flight_micro_batches, full.stages[i].in_flight_micro_batches);
    EXPECT_EQ(fast.stages[i].peak_alloc_bytes, full.stages[i].peak_alloc_bytes);
  }
  return extrapolated;
}

TEST_F(SteadyReplayTest, OneFOneB) {
  expect_same(plan("", 64));
  expect_same(plan(R"(, "pp_comm_async": true)", 64));
  expect_same(plan("", 64, 4, Mode::SimuMax12));
}

TEST_F(SteadyReplayTest, InterleavedWithAPartialLastGroup) {
  const Plan p = plan(R"(, "interleaving_size": 2, "pp_comm_async": true)", 37);
  ASSERT_EQ(p.par.vpp, 2);
  ASSERT_NE(p.batch.micro_batch_num % p.vp_group, 0);
  expect_same(p);
  expect_same(plan(R"(, "interleaving_size": 2)", 40));  // blocking bundles
}

TEST_F(SteadyReplayTest, UnevenStages) {
  m_.layer_num = 10;
  expect_same(plan(R"(, "num_layers_in_first_pipeline_stage": 1)", 64));
}

TEST_F(SteadyReplayTest, ZeroBubble) { expect_same(plan(R"(, "pipeline_schedule": "zero_bubble_h1", "pp_comm_async": true)", 64)); }

TEST_F(SteadyReplayTest, OverlappedGradReduceAndParamGather) {
  expect_same(plan(R"(, "zero_state": 1, "overlap_grad_reduce": true, "overlap_param_gather": true)", 64));
}

// With the host stream (the preset's host.framework) the program is as periodic: its host ops
// repeat with the passes and the blocking bundles re-align host and device every micro-batch.
TEST_F(SteadyReplayTest, HostStreamExtrapolates) {
  sys_ = host_sys_;
  expect_same(plan("", 64));
  expect_same(plan(R"(, "overlap_grad_reduce": true)", 64));
}

TEST_F(SteadyReplayTest, ShardedParametersGatherPerMicroBatch) {
  expect_same(plan(R"(, "zero_state": 3)", 64));
  expect_same(plan(R"(, "zero_state": 3, "overlap_grad_reduce": true)", 64));
}

TEST_F(SteadyReplayTest, CombinedOneFOneBWithEpAllToAllOverlap) {
  ModelConfig m = preset_model("mixtral-8x7b");
  m.layer_num = 4;
  expect_same(plan_of(m, R"({"seq_len": 4096, "micro_batch_size": 1, "world_size": 8, "ep_size": 8,
      "enable_recompute": false, "micro_batch_num": 64, "overlap_moe_expert_parallel_comm": true})"));
}

// Every schedule family over pipeline depths, chunks, micro-batch counts (residues of the
// interleaved group included), stage splits and DP settings. Zero bubble with ZeRO-3 falls
// back: over pp 2 rank 1 (deferred weight gradients, per-micro-batch gathers) is a little slower
// per micro-batch than rank 0 and holds rank 0 back only after about 13 micro-batches, so three
// replays of 6–8 grow linearly yet miss it; the per-rank period check catches it. pp 8 with 2
// chunks and 40 micro-batches has too few past the replays (48, 56, 64).
TEST_F(SteadyReplayTest, Sweep) {
  m_.layer_num = 48;
  int cases = 0, extrapolated = 0;
  for (int64_t pp : {2, 3, 4, 8})
    for (int64_t v : {1, 2})
      for (int64_t mbc : {40, 53, 67})
        for (const char* dp : {"", R"(, "zero_state": 1, "overlap_grad_reduce": true)", R"(, "zero_state": 3)"})
          for (const char* sched : {"", R"(, "pipeline_schedule": "zero_bubble_h1")", R"(, "num_layers_in_first_pipeline_stage": 2)"}) {
            // ZeRO-3 under the interleaved schedule is left out: its program deadlocks in the
            // engine whatever the replay.
            if ((v > 1 && (std::string(sched).find("zero_bubble") != std::string::npos ||
                           std::string(dp).find("zero_state\": 3") != std::string::npos)) ||
                (std::string(sched).find("first") != std::string::npos && (v > 1 || (48 - 2) % (pp - 1) != 0)))
              continue;
            const std::string extra = std::string(dp) + sched + R"(, "pp_comm_async": true, "interleaving_size": )" +
                                      std::to_string(v);
            SCOPED_TRACE(extra + " pp " + std::to_string(pp) + " mbc " + std::to_string(mbc));
            std::optional<Plan> p;
            try {
              p = plan(extra, mbc, pp);
            } catch (const ConfigError&) {
              continue;  // a partial last interleaved group that Megatron's order cannot run
            }
            extrapolated += expect_same(*p, true) ? 1 : 0;
            ++cases;
          }
  EXPECT_EQ(cases, 110);
  EXPECT_EQ(extrapolated, 96);
}

// Too few micro-batches past the three replays, or events to record: the full replay.
TEST_F(SteadyReplayTest, FallsBackToTheFullReplay) {
  const Plan few = plan("", 12);  // the replays would hold 10, 11 and 12 micro-batches
  EXPECT_EQ(estimate(few, nullptr, false, PipelineReplay::Steady).engine_ops,
            estimate(few, nullptr, false, PipelineReplay::Full).engine_ops);
  const Plan p = plan("", 64);
  const Estimate events = estimate(p, nullptr, true, PipelineReplay::Steady);
  EXPECT_EQ(events.engine_ops, estimate(p, nullptr, false, PipelineReplay::Full).engine_ops);
  EXPECT_GE(static_cast<int64_t>(events.timeline.events.size()), events.engine_ops);
}

// The replay's cost is that of three short programs whatever the micro-batch count.
TEST_F(SteadyReplayTest, CostDoesNotGrowWithMicroBatches) {
  const Estimate m64 = estimate(plan("", 64), nullptr, false, PipelineReplay::Auto);
  const Estimate m1024 = estimate(plan("", 1024), nullptr, false, PipelineReplay::Auto);
  const Estimate full = estimate(plan("", 1024), nullptr, false, PipelineReplay::Full);
  EXPECT_EQ(m64.engine_ops, m1024.engine_ops);
  EXPECT_LT(20 * m1024.engine_ops, full.engine_ops);
  expect_near(m1024.iteration_time_s, full.iteration_time_s, "step time");
}

// Every schedule with every data-parallel sharding and overlap finishes (no deadlock in the
// engine), and the fast path agrees with the full replay. Without overlap_grad_reduce a chunk's
// last reductions wait for the rank's last compute; queued in step order under interleaving they
// once held the per-micro-batch reductions (zero_state >= 2) and gathers of later steps.
TEST_F(SteadyReplayTest, EveryShardingAndOverlapFinishes) {
  for (const char* sched : {R"(, "interleaving_size": 2)", R"(, "interleaving_size": 2, "pp_comm_async": true)", "",
                            R"(, "pipeline_schedule": "zero_bubble_h1", "pp_comm_async": true)"})
    for (int zero = 0; zero <= 3; ++zero)
      for (bool grad : {false, true}) {
        if (zero == 0 && grad) continue;
        const std::string extra = std::string(sched) + R"(, "zero_state": )" + std::to_string(zero) +
                                  R"(, "overlap_grad_reduce": )" + (grad ? "true" : "false");
        SCOPED_TRACE(extra);
        const Plan p = plan(extra, 12, 2);
        const Estimate full = estimate(p, nullptr, false, PipelineReplay::Full);
        EXPECT_GT(full.iteration_time_s, 0);
        expect_near(estimate(p, nullptr, false, PipelineReplay::Auto).iteration_time_s, full.iteration_time_s, "auto");
      }
}

}  // namespace
}  // namespace trainsim
