// overlap_moe_expert_parallel_comm: Megatron's combined 1F1B. The merged forward/backward step
// (hand-computed replays), the program, one micro-batch's all-to-all under another's compute on
// the timeline, and the input checks.
#include <gtest/gtest.h>

#include <deque>

#include "test_estimate.h"
#include "estimate/estimate.h"
#include "plan/plan.h"
#include "schedule/a2a_overlap.h"
#include "schedule/lower.h"
#include "schedule/program.h"
#include "test_errors.h"
#include "test_presets.h"
#include "system/presets.h"

namespace trainsim {
namespace {

using test::error_of;
using test::preset_model;
using test::preset_system;

A2aPass pass(std::vector<double> compute, std::vector<double> a2a) { return {std::move(compute), std::move(a2a)}; }

TEST(A2aOverlapTest, PassPiecesCloseAtEachAllToAll) {
  A2aPass p;
  p.add_compute(1);
  p.add_compute(2);
  p.add_a2a(4);
  p.add_a2a(5);  // an all-to-all right after another: an empty compute piece between them
  p.add_compute(3);
  EXPECT_EQ(p.compute, (std::vector<double>{3, 0, 3}));
  EXPECT_EQ(p.a2a, (std::vector<double>{4, 5}));
  EXPECT_DOUBLE_EQ(p.total(), 15);
}

TEST(A2aOverlapTest, MergedStepHidesEachAllToAllUnderTheOtherPass) {
  // F: compute 2 | a2a 1 | compute 3 | a2a 1 | compute 1 (8 s); B: 1 | 2 | 4 | 1 | 2 (10 s).
  // Compute stream D0 C0 D1 C1 D2 C2, Ep stream Ba0 Fa0 Ba1 Fa1:
  //   D0 [0,1]; Ba0 [1,3]; C0 [1,3]; Fa0 [3,4]; D1 (needs Ba0) [3,7]; Ba1 [7,8];
  //   C1 (needs Fa0) [7,10]; Fa1 [10,11]; D2 (needs Ba1) [10,12]; C2 (needs Fa1) [12,13].
  // 13 s = the compute alone (serial: 18 s): every all-to-all is hidden.
  const A2aPass f = pass({2, 3, 1}, {1, 1}), b = pass({1, 4, 2}, {2, 1});
  EXPECT_DOUBLE_EQ(merged_step_time(f, b, 0), 13);
  // Slow-down 0.5 while an all-to-all runs beside a piece (+0.5·min(piece, all-to-all)): C0 2 + 1
  // = 3, D1 4 + 0.5, C1 3 + 0.5, D2 2 + 0.5 (D0 and C2 run alone). D0 [0,1]; Ba0 [1,3]; C0 [1,4];
  // Fa0 [4,5]; D1 [4,8.5]; Ba1 [8.5,9.5]; C1 [8.5,12]; Fa1 [12,13]; D2 [12,14.5]; C2 [14.5,15.5].
  EXPECT_DOUBLE_EQ(merged_step_time(f, b, 0.5), 15.5);
}

// merged_step_time keeps the steps it timed by content: asked again, after others and in another
// order, each gives its own time (the values of the tests above), whatever was timed between.
TEST(A2aOverlapTest, TimesKeptByContent) {
  const A2aPass f = pass({2, 3, 1}, {1, 1}), b = pass({1, 4, 2}, {2, 1});
  for (int round = 0; round < 2; ++round) {
    EXPECT_DOUBLE_EQ(merged_step_time(f, b, 0.5), 15.5);
    EXPECT_DOUBLE_EQ(merged_step_time(f, b, 0), 13);
    EXPECT_DOUBLE_EQ(merged_step_time(pass({1, 1}, {5}), pass({1, 1}, {5}), 0), 12);
    // One value moved: C0 2 → 3 adds its second alone (D0 [0,1]; C0 [1,4]; Fa0 [4,5]; D1 [4,8];
    // the rest 1 s later than above: 14).
    EXPECT_DOUBLE_EQ(merged_step_time(pass({3, 3, 1}, {1, 1}), b, 0), 14);
  }
}

TEST(A2aOverlapTest, DeepEpSlowsComputeByTheShareOfSmsItTakes) {
  // u = num_sms / sm_count, compute on the other 1 − u: slow-down u/(1 − u) = num_sms/(sm_count −
  // num_sms). Megatron's 20 of H100's 132 SMs: 20/112; 24 of A100's 108: 24/84 = 2/7.
  EXPECT_DOUBLE_EQ(deepep_slowdown(20, 132), 20.0 / 112);
  EXPECT_DOUBLE_EQ(deepep_slowdown(24, 108), 2.0 / 7);
  // The merged step of the test above with slow-down k: C0 2 + 2k, D1 4 + k, C1 3 + k, D2 2 + k
  // (D0 and C2 alone), each waiting for the one before: 13 + 5k. k = 20/112 = 5/28: 13 + 25/28.
  const A2aPass f = pass({2, 3, 1}, {1, 1}), b = pass({1, 4, 2}, {2, 1});
  EXPECT_DOUBLE_EQ(merged_step_time(f, b, deepep_slowdown(20, 132)), 13 + 25.0 / 28);
}

TEST(A2aOverlapTest, LongAllToAllsStayPartlyExposed) {
  // F: 1 | 5 | 1, B: 1 | 5 | 1. D0 [0,1]; Ba0 [1,6]; C0 [1,2]; Fa0 [6,11]; D1 [6,7];
  // C1 [11,12]: 12 s against 14 s serial (each 5 s all-to-all hides 1 s of the other's compute).
  EXPECT_DOUBLE_EQ(merged_step_time(pass({1, 1}, {5}), pass({1, 1}, {5}), 0), 12);
}

// A chunk without layers (an empty stage of a pipeline layout) has a pass of no pieces: it is one
// empty piece, so the step still has first and last ops for the schedule's links. B: 1 | 3 | 2:
// D0 [0,1]; F's empty piece [1,1]; Ba0 [1,4]; D1 [4,6].
TEST(A2aOverlapTest, PassOfNoPiecesIsOneEmptyPiece) {
  const A2aPass none, b = pass({1, 2}, {3});
  EXPECT_DOUBLE_EQ(merged_step_time(none, b, 0.5), 6);
  EXPECT_DOUBLE_EQ(merged_step_time(b, none, 0), 6);
  EXPECT_DOUBLE_EQ(merged_step_time(none, none, 0), 0);
  Engine e(1);
  const MergedOps m = add_merged_step(e, 0, none, {StepKind::Forward, 0, 1}, b, {StepKind::Backward, 0, 0}, 0);
  EXPECT_GE(m.f_first, 0);
  EXPECT_EQ(m.f_first, m.f_last);
  EXPECT_EQ(e.size(), 4u);
}

TEST(A2aOverlapTest, CombinedProgramsWarmUpOneMoreForward) {
  // No pipelining: F0, then F1 merged with B0, F2 with B1, then B2.
  const Program p = interleaved(1, 1, 3, 1, true);
  ASSERT_EQ(p.ranks[0].size(), 6u);
  const Pass F = Pass::Forward, B = Pass::Backward;
  const std::vector<std::pair<int32_t, Pass>> order = {{0, F}, {1, F}, {0, B}, {2, F}, {1, B}, {2, B}};
  for (size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(p.ranks[0][i].mb, order[i].first) << i;
    EXPECT_EQ(p.ranks[0][i].pass, order[i].second) << i;
    EXPECT_EQ(p.ranks[0][i].merged, i == 1 || i == 3) << i;
  }
  // Interleaved pp 2, v 2, 4 micro-batches in groups of 2: rank 1 warms up (v−1)·2 + 1 = 3
  // forwards (Megatron: 2); its first steady forward (chunk 1, micro-batch 1) runs beside the
  // backward of chunk 1, micro-batch 0.
  const Program q = interleaved(2, 2, 4, 2, true);
  const auto& r1 = q.ranks[1];
  EXPECT_FALSE(r1[2].merged);
  ASSERT_TRUE(r1[3].merged);
  EXPECT_EQ(r1[3].chunk, 1);
  EXPECT_EQ(r1[3].mb, 1);
  EXPECT_EQ(r1[4].pass, Pass::Backward);
  EXPECT_EQ(r1[4].chunk, 1);
  EXPECT_EQ(r1[4].mb, 0);
}

TEST(A2aOverlapTest, TimelineShowsOneMicroBatchsAllToAllUnderAnothersCompute) {
  // pp 1, 2 micro-batches: F0 (3 s), F1 merged with B0, B1 (6 s). F = 1 | a2a 1 | 1, B = 2 | a2a
  // 2 | 2. F0 [0,3]; D0 [3,5]; Ba0 [5,7]; C0 [5,6]; Fa0 [7,8]; D1 [7,9]; C1 [9,10]; B1 [10,16].
  // 16 s against 18 s unmerged.
  PipelineCosts c;
  c.chunks = {{{3, 6, 0}}};
  c.a2a = {{{pass({1, 1}, {1}), pass({2, 2}, {2})}}};
  const Timeline tl = lower(interleaved(1, 1, 2, 1, true), c, P2PMode::Async).run();
  EXPECT_DOUBLE_EQ(tl.span(), 16);
  std::vector<TimelineEvent> ep;
  for (const auto& e : tl.events)
    if (e.stream == Stream::Ep) ep.push_back(e);
  ASSERT_EQ(ep.size(), 2u);
  EXPECT_EQ(ep[0].kind, StepKind::EpComm);
  EXPECT_EQ(ep[0].mb, 0);  // the backward's all-to-all of micro-batch 0 …
  EXPECT_DOUBLE_EQ(ep[0].start, 5);
  EXPECT_DOUBLE_EQ(ep[0].end, 7);
  EXPECT_EQ(ep[1].mb, 1);  // … and the forward's of micro-batch 1 [7, 8]
  EXPECT_DOUBLE_EQ(ep[1].start, 7);
  // Each under the other micro-batch's compute: forward of 1 at [5, 6], backward of 0 at [7, 9].
  auto compute_at = [&](double at, StepKind kind, int32_t mb) {
    for (const auto& e : tl.events)
      if (e.stream == Stream::Compute && e.kind == kind && e.mb == mb && e.start <= at && at < e.end) return true;
    return false;
  };
  EXPECT_TRUE(compute_at(5, StepKind::Forward, 1));
  EXPECT_TRUE(compute_at(7.5, StepKind::Backward, 0));
}

// The bubble is the pipeline time the passes do not fill, the passes counted as run: a merged
// step takes less than its two passes, so with pp 1 (1F1B, no warm-up bubble) it is near zero,
// not minus the hidden all-to-all time (−219 ms before).
TEST(A2aOverlapTest, BubbleCountsMergedStepsAsRun) {
  const SystemConfig sys = preset_system("h100-sxm-80g");
  const ModelConfig m = preset_model("deepseek-v2-lite");
  StrategyConfig s = load_strategy(resolve_config("strategy", "ep8-pp1-dp8-moe").text, "ep8-pp1-dp8-moe");
  s.overlap_moe_expert_parallel_comm = true;
  const Estimate e = estimate(m, s, sys);
  const StageTime& st = e.stage_times[0];
  EXPECT_GT(st.hidden_comm_by_group_s[static_cast<size_t>(Group::EP)], 0.1);  // 223 ms hidden
  EXPECT_GE(st.bubble_s, 0);
  EXPECT_LT(st.bubble_s, 0.01 * st.pipeline_s);
}

const PlanSources kSrc{"m.json", "s.json", "y.json"};

class A2aOverlapEstimateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_ = preset_model("mixtral-8x7b");
    m_.layer_num = 4;
    sys_ = preset_system("h100-sxm-80g");
    sys_.host_framework.reset();  // the device streams alone: merged steps keep no sync points
  }
  StrategyConfig strategy(const std::string& extra, int ep = 8, int mbc = 4) const {
    return load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "world_size": 8, "tp_size": 1,
        "enable_straggler_model": false, "enable_recompute": false, "ep_size": )" +
                             std::to_string(ep) + R"(, "micro_batch_num": )" + std::to_string(mbc) + extra + "}",
                         "s.json");
  }
  std::string error(const ModelConfig& m, const std::string& extra, int ep = 8, int mbc = 4,
                    Mode mode = Mode::Default) const {
    return error_of([&] { (void)resolve_plan(m, strategy(extra, ep, mbc), sys_, mode, kSrc); });
  }
  ModelConfig m_;
  SystemConfig sys_;
};

TEST_F(A2aOverlapEstimateTest, MergedStepsHideAllToAllsOnTheEpStream) {
  const Estimate base = estimate(m_, strategy(""), sys_);
  const Estimate merged = estimate(m_, strategy(R"(, "overlap_moe_expert_parallel_comm": true)"), sys_);
  double ep_busy = 0;
  for (const auto& e : merged.timeline.events)
    if (e.stream == Stream::Ep) ep_busy += e.end - e.start;
  // Three merged steps (micro-batches 1–3 beside 0–2), each with the 4 layers' dispatch and
  // combine of both passes: 3 · 4 · 2 · 2 all-to-alls.
  size_t n = 0;
  for (const auto& e : merged.timeline.events) n += e.kind == StepKind::EpComm;
  EXPECT_EQ(n, 48u);
  EXPECT_GT(ep_busy, 0);
  // The pipeline is shorter by at most the all-to-all time moved off the compute stream; with
  // pp 1 nothing waits inside a merged step, so it is shorter by exactly what they save (the
  // hidden EP time).
  EXPECT_LT(merged.pipeline_s, base.pipeline_s);
  EXPECT_GT(merged.pipeline_s, base.pipeline_s - ep_busy - 1e-12);
  const auto ep = static_cast<size_t>(Group::EP);
  const StageTime& st = merged.stage_times[0];
  EXPECT_GT(st.hidden_comm_by_group_s[ep], 0);
  EXPECT_NEAR(base.pipeline_s - merged.pipeline_s, st.hidden_comm_by_group_s[ep], 1e-12);
  EXPECT_NEAR(st.exposed_comm_s(ep), st.comm_by_group_s[ep] - st.hidden_comm_by_group_s[ep], 1e-15);
  // The extra warm-up forward keeps a second micro-batch's activations alive.
  EXPECT_EQ(base.stages[0].in_flight_micro_batches, 1);
  EXPECT_EQ(merged.stages[0].in_flight_micro_batches, 2);
}

// A layout whose third virtual stage (rank 0, chunk 1) holds no layer: its merged steps are
// empty pieces on the schedule (once an op-less step that the schedule linked to), so every
// compute op of that chunk takes no time and it sends no all-to-all; the other chunks' passes do
// take time. The steady-state replay agrees with the full one.
TEST_F(A2aOverlapEstimateTest, EmptyLayoutStageRunsMergedSteps) {
  const StrategyConfig s = load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "world_size": 16, "pp_size": 2,
      "ep_size": 8, "micro_batch_num": 16, "enable_straggler_model": false, "enable_recompute": false,
      "pipeline_model_parallel_layout": "Et*2|t*2||L", "overlap_moe_expert_parallel_comm": true})",
                                         "s.json");
  const Plan p = resolve_plan(m_, s, sys_, Mode::Default, kSrc);
  ASSERT_EQ(p.chunks[0][1].layers, 0);
  const Estimate full = estimate(p, nullptr, false, PipelineReplay::Full);
  EXPECT_NEAR(estimate(p, nullptr, false, PipelineReplay::Steady).iteration_time_s, full.iteration_time_s,
              1e-9 * full.iteration_time_s);
  const Estimate traced = estimate(p, nullptr, true, PipelineReplay::Full);
  size_t empty_ops = 0, timed_ops = 0;
  for (const auto& e : traced.timeline.events) {
    if (e.rank == 0 && e.chunk == 1 && e.stream == Stream::Compute &&
        (e.kind == StepKind::Forward || e.kind == StepKind::Backward)) {
      EXPECT_EQ(e.end, e.start);
      ++empty_ops;
    }
    if (e.rank == 0 && e.chunk == 1) {
      EXPECT_NE(e.stream, Stream::Ep);
    }
    if (e.chunk == 0 && e.stream == Stream::Compute && e.kind == StepKind::Forward) timed_ops += e.end > e.start;
  }
  EXPECT_EQ(empty_ops, 32u);  // a forward and a backward for each of 16 micro-batches
  EXPECT_GT(timed_ops, 0u);
}

// pp 3 × 3 chunks: 7 micro-batches (groups of 3, the last partial) cannot make progress once a
// merged step waits for both its inputs (once an internal error in the engine); 6 and 8 can, and
// without the merged steps 7 can too.
TEST_F(A2aOverlapEstimateTest, PartialGroupThatMergedStepsCannotFinishIsAnInputError) {
  ModelConfig m = m_;
  m.layer_num = 18;
  std::deque<StrategyConfig> kept;  // a plan points at its strategy
  auto plan = [&](int mbc, bool merged) {
    const StrategyConfig& s = kept.emplace_back(load_strategy(
        R"({"seq_len": 4096, "micro_batch_size": 1, "world_size": 24, "pp_size": 3, "interleaving_size": 3,
            "ep_size": 8, "pp_comm_async": true, "micro_batch_num": )" +
            std::to_string(mbc) + (merged ? R"(, "overlap_moe_expert_parallel_comm": true})" : "}"),
        "s.json"));
    return resolve_plan(m, s, sys_, Mode::Default, kSrc);
  };
  EXPECT_EQ(error_of([&] { (void)plan(7, true); }),
            "s.json: /micro_batch_num: Megatron's interleaved order cannot make progress with pp_size 3, "
            "interleaving_size 3, micro_batch_num 7 in groups of 3 (the partial last group leaves a rank waiting on "
            "its own backward, the merged steps of overlap_moe_expert_parallel_comm waiting for both their inputs); "
            "use a micro_batch_num that is a multiple of the group");
  for (int mbc : {6, 8}) EXPECT_GT(estimate(plan(mbc, true), nullptr, false).iteration_time_s, 0) << mbc;
  EXPECT_GT(estimate(plan(7, false), nullptr, false).iteration_time_s, 0);
}

TEST_F(A2aOverlapEstimateTest, DeepEpKernelsTakeTheirSmsFromTheComputeBesideThem) {
  const std::string flex = R"(, "overlap_moe_expert_parallel_comm": true, "moe_token_dispatcher_type": "flex",
      "moe_enable_deepep": true)";
  const Estimate dflt = estimate(m_, strategy(flex), sys_);
  const Estimate sms20 = estimate(m_, strategy(flex + R"(, "moe_deepep_num_sms": 20)"), sys_);
  const Estimate sms66 = estimate(m_, strategy(flex + R"(, "moe_deepep_num_sms": 66)"), sys_);
  EXPECT_DOUBLE_EQ(dflt.pipeline_s, sms20.pipeline_s);  // Megatron's default: 20 SMs
  // Half of H100's 132 SMs: compute beside an all-to-all takes twice as long (slow-down 1 against
  // 20/112), so less of the EP time is hidden (DeepEP's own kernels get faster on more SMs too).
  const auto ep = static_cast<size_t>(Group::EP);
  EXPECT_LT(sms66.stage_times[0].hidden_comm_by_group_s[ep], sms20.stage_times[0].hidden_comm_by_group_s[ep]);
  // Over a link slower than DeepEP's SMs (NVLink at 50 GB/s · 0.75, below 330 GB/s · 7/8 on 20
  // SMs) the dispatch takes the same time on 20 and 66 SMs: only the compute beside it slows,
  // and the step grows.
  SystemConfig slow = sys_;
  slow.networks.at("high_intra_node").bandwidth.bytes_per_s = 50e9;
  refresh_fingerprint(slow);
  const Estimate s20 = estimate(m_, strategy(flex + R"(, "moe_deepep_num_sms": 20)"), slow);
  const Estimate s66 = estimate(m_, strategy(flex + R"(, "moe_deepep_num_sms": 66)"), slow);
  EXPECT_GT(s66.pipeline_s, s20.pipeline_s);
  EXPECT_LT(s66.stage_times[0].hidden_comm_by_group_s[ep], s20.stage_times[0].hidden_comm_by_group_s[ep]);
  // The EP network's processor_usage (NCCL's all-to-all) does not apply to DeepEP's kernels.
  SystemConfig busy = sys_;
  busy.networks.at("high_intra_node").processor_usage = 0.5;
  refresh_fingerprint(busy);
  EXPECT_DOUBLE_EQ(estimate(m_, strategy(flex), busy).pipeline_s, dflt.pipeline_s);
}

TEST_F(A2aOverlapEstimateTest, DeepEpNumSmsChecks) {
  const std::string deepep = R"(, "moe_token_dispatcher_type": "flex", "moe_enable_deepep": true)";
  const std::string on = R"(, "overlap_moe_expert_parallel_comm": true)";
  EXPECT_EQ(error(m_, R"(, "moe_deepep_num_sms": 24)"),
            "s.json: /moe_deepep_num_sms: changes nothing without the DeepEP backend; set moe_enable_deepep to true "
            "or remove it");
  // Without the overlap the SMs still set DeepEP's bandwidth (model/moe_dispatch.h): kept, checked.
  EXPECT_EQ(error(m_, deepep + R"(, "moe_deepep_num_sms": 24)"), "<no error>");
  EXPECT_EQ(error(m_, deepep + R"(, "moe_deepep_num_sms": 0)"),
            "s.json: /moe_deepep_num_sms: must be at least 1 (Megatron's default: 20), got 0");
  EXPECT_EQ(error(m_, deepep + on + R"(, "moe_deepep_num_sms": 132)"),
            "s.json: /moe_deepep_num_sms: must be below the accelerator's 132 SMs (accelerator.sm_count), leaving "
            "some to compute; got 132");
  EXPECT_EQ(error(m_, deepep + on + R"(, "moe_deepep_num_sms": 0)"),
            "s.json: /moe_deepep_num_sms: must be at least 1 (Megatron's default: 20), got 0");
  EXPECT_EQ(error(m_, R"(, "moe_deepep_num_sms": 24)", 8, 4, Mode::SimuMax12),
            "s.json: /moe_deepep_num_sms: is not part of SimuMax v1.2 (it routes with all2all, balanced); remove it "
            "or use the default mode");
  SystemConfig no_sms = sys_;
  no_sms.sm_count.reset();
  EXPECT_EQ(error_of([&] { (void)resolve_plan(m_, strategy(deepep + on), no_sms, Mode::Default, kSrc); }),
            "y.json: /accelerator/sm_count: DeepEP's kernels beside compute (overlap_moe_expert_parallel_comm) take "
            "moe_deepep_num_sms of the accelerator's SMs; give its SM count (datasheet: A100 108, H100 SXM 132, B200 "
            "148)");
  // Without DeepEP the all-to-all's SMs come from the EP network's processor_usage: no SM count needed.
  EXPECT_NO_THROW((void)resolve_plan(m_, strategy(on), no_sms, Mode::Default, kSrc));
}

// HybridEP's kernels take moe_hybridep_num_sms of the SMs beside compute under the EP overlap, as
// DeepEP's take theirs (its links set its bandwidth, so only the compute beside it slows).
TEST_F(A2aOverlapEstimateTest, HybridEpSmsTakeTheirShareOfTheComputeBesideThem) {
  const std::string hybrid = R"(, "overlap_moe_expert_parallel_comm": true, "moe_token_dispatcher_type": "flex",
      "moe_flex_dispatcher_backend": "hybridep")";
  const Estimate dflt = estimate(m_, strategy(hybrid), sys_);
  const Estimate sms16 = estimate(m_, strategy(hybrid + R"(, "moe_hybridep_num_sms": 16)"), sys_);
  const Estimate sms66 = estimate(m_, strategy(hybrid + R"(, "moe_hybridep_num_sms": 66)"), sys_);
  const auto ep = static_cast<size_t>(Group::EP);
  EXPECT_LT(sms66.stage_times[0].hidden_comm_by_group_s[ep], sms16.stage_times[0].hidden_comm_by_group_s[ep]);
  EXPECT_GT(sms66.pipeline_s, sms16.pipeline_s);
  EXPECT_NE(dflt.pipeline_s, sms16.pipeline_s);  // unset: the EP network's processor_usage share
  const std::string on = R"(, "overlap_moe_expert_parallel_comm": true)";
  const std::string backend = R"(, "moe_token_dispatcher_type": "flex", "moe_flex_dispatcher_backend": "hybridep")";
  EXPECT_EQ(error(m_, backend + on + R"(, "moe_hybridep_num_sms": 132)"),
            "s.json: /moe_hybridep_num_sms: must be below the accelerator's 132 SMs (accelerator.sm_count), leaving "
            "some to compute; got 132");
  EXPECT_EQ(error(m_, backend + on + R"(, "moe_hybridep_num_sms": 0)"),
            "s.json: /moe_hybridep_num_sms: must be in [1, 65536]");
  SystemConfig no_sms = sys_;
  no_sms.sm_count.reset();
  EXPECT_EQ(error_of([&] {
              (void)resolve_plan(m_, strategy(backend + on + R"(, "moe_hybridep_num_sms": 16)"), no_sms, Mode::Default,
                                 kSrc);
            }),
            "y.json: /accelerator/sm_count: HybridEP's kernels beside compute (overlap_moe_expert_parallel_comm) take "
            "moe_hybridep_num_sms of the accelerator's SMs; give its SM count (datasheet: A100 108, H100 SXM 132, "
            "B200 148)");
}

TEST_F(A2aOverlapEstimateTest, InputChecks) {
  const std::string on = R"(, "overlap_moe_expert_parallel_comm": true)";
  EXPECT_EQ(error(preset_model("llama3-8b"), on, 1),
            "s.json: /overlap_moe_expert_parallel_comm: needs an MoE model with expert parallelism: the overlapped "
            "all-to-alls are the EP dispatch and combine; got a dense model, ep_size 1");
  EXPECT_EQ(error(m_, on + R"(, "pp_size": 2)", 4),
            "s.json: /overlap_moe_expert_parallel_comm: with pp_size 2 Megatron's combined 1F1B needs the "
            "interleaved schedule (a virtual pipeline); set interleaving_size > 1");
  EXPECT_EQ(error(m_, on, 8, 1),
            "s.json: /overlap_moe_expert_parallel_comm: changes nothing with one micro-batch and no pipeline: no "
            "forward runs beside a backward; set micro_batch_num ≥ 2 or remove it");
  EXPECT_EQ(error(m_, on, 8, 4, Mode::SimuMax12),
            "s.json: /overlap_moe_expert_parallel_comm: not part of SimuMax v1.2; remove it, or use the default mode");
}

// The merged steps cut each pass from the chunk's ops, so what the shared expert hides of the
// all-to-alls (moe_shared_expert_overlap) shortens merged passes too: the pieces of micro-batch
// 1's merged forward (compute stream and Ep stream) add up to the forward pass time, those of
// micro-batch 0's merged backward to the backward pass time. processor_usage 0: no piece is
// stretched by the all-to-all beside it.
TEST_F(A2aOverlapEstimateTest, MergedPassesAddUpToThePassTimesWithTheSharedExpertOverlap) {
  ModelConfig m = preset_model("deepseek-v2-lite");
  m.layer_num = 4;
  SystemConfig sys = sys_;
  for (auto& net : sys.networks) net.second.processor_usage = 0;
  refresh_fingerprint(sys);
  const std::string on = R"(, "overlap_moe_expert_parallel_comm": true)";
  const Estimate plain = estimate(m, strategy(on, 8, 2), sys);
  const Estimate shared = estimate(m, strategy(on + R"(, "moe_shared_expert_overlap": true)", 8, 2), sys);
  // Program F0, [F1 B0], B1.
  double f1 = 0, b0 = 0;
  for (const auto& ev : shared.timeline.events) {
    const bool ep = ev.kind == StepKind::EpComm;
    if (ev.mb == 1 && (ev.kind == StepKind::Forward || ep)) f1 += ev.end - ev.start;
    if (ev.mb == 0 && (ev.kind == StepKind::Backward || ep)) b0 += ev.end - ev.start;
  }
  const StageTime& st = shared.stage_times[0];
  EXPECT_NEAR(f1, st.fwd_per_mb_s, 1e-12);
  EXPECT_NEAR(b0, st.bwd_per_mb_s, 1e-12);
  EXPECT_LT(st.fwd_per_mb_s, plain.stage_times[0].fwd_per_mb_s);
  EXPECT_LT(st.bwd_per_mb_s, plain.stage_times[0].bwd_per_mb_s);
}

}  // namespace
}  // namespace trainsim
