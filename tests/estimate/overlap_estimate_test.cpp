// Overlaps and data-parallel sharding on the timeline: DP buckets under the backward, the
// parameter all-gather ahead of the forward, tp_comm_overlap, and their input checks.
#include <gtest/gtest.h>

#include <algorithm>

#include "test_estimate.h"
#include "core/units.h"
#include "estimate/estimate.h"
#include "plan/plan.h"
#include "test_errors.h"
#include "test_presets.h"

namespace trainsim {
namespace {

using test::preset_model;
using test::preset_system;
using test::error_of;

const PlanSources kSrc{"m.json", "s.json", "y.json"};

class OverlapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_ = preset_model("llama3-8b");
    m_.layer_num = 8;
    // A small vocabulary: the embedding's gradients come last in the backward, and a large one
    // would fill buckets of its own that all wait for the end of the backward.
    m_.vocab_size = 256;
    sys_ = preset_system("h100-sxm-80g");
  }
  StrategyConfig strategy(const char* extra = "") const {
    return load_strategy(std::string(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 4,
        "world_size": 8, "enable_straggler_model": false, "enable_recompute": false)") + extra + "}",
                         "s.json");
  }
  ModelConfig m_;
  SystemConfig sys_;
};

double dp_exposed(const Estimate& e) { return e.stage_times[0].exposed_comm_s(static_cast<size_t>(Group::DP)); }

// The acceptance check of overlap_grad_reduce: buckets reduce while the last micro-batch's
// backward runs; only the last bucket (first layer and embedding, whose gradients come last)
// remains after the backward.
TEST_F(OverlapTest, OverlappedGradReduceExposesTheLastBucket) {
  // bf16 gradients: a 40 M bucket's all-reduce (0.44 ms) is shorter than the backward left after
  // the second-last bucket is ready (26 M parameters of a 6.6 ms, 218 M-parameter layer: 0.79 ms).
  const char* bf16 = R"(, "zero_state": 0, "grad_reduce_in_bf16": true)";
  const Estimate e = estimate(m_, strategy((std::string(bf16) + R"(, "overlap_grad_reduce": true)").c_str()), sys_);
  std::vector<TimelineEvent> dp;
  for (const auto& ev : e.timeline.events)
    if (ev.stream == Stream::Dp) dp.push_back(ev);
  ASSERT_EQ(dp.size(), 44u);  // 8 · 218.1 M + 2 · 1.05 M + 4096 parameters in 40 M buckets
  const TimelineEvent& last = dp.back();
  EXPECT_NEAR(dp_exposed(e), last.end - last.start, 0.01 * (last.end - last.start));
  EXPECT_NEAR(last.end, e.pipeline_s + dp_exposed(e), 1e-12);
  // Everything else was hidden under the backward.
  const double total = e.stage_times[0].comm_by_group_s[static_cast<size_t>(Group::DP)];
  EXPECT_LT(dp_exposed(e), 0.2 * total);

  const Estimate serial = estimate(m_, strategy(bf16), sys_);  // overlap_grad_reduce false: Megatron's default
  EXPECT_NEAR(dp_exposed(serial), total, 1e-9 * total);
  EXPECT_NEAR(serial.iteration_time_s - e.iteration_time_s, total - dp_exposed(e), 1e-9);
}

// With the distributed optimizer the parameter all-gather follows the optimizer, or, with
// overlap_param_gather, runs ahead of the forward: the first forward waits for one bucket.
TEST_F(OverlapTest, ParamGatherAheadOfTheForwardExposesTheFirstBucket) {
  const Estimate after = estimate(m_, strategy(R"(, "zero_state": 1)"), sys_);
  const Estimate ahead = estimate(m_, strategy(R"(, "zero_state": 1, "overlap_param_gather": true)"), sys_);
  double first_fwd = 1e9, first_ag_end = 0;
  for (const auto& ev : ahead.timeline.events) {
    if (ev.stream == Stream::Compute && ev.kind == StepKind::Forward) first_fwd = std::min(first_fwd, ev.start);
    if (ev.stream == Stream::Dp && ev.start == 0) first_ag_end = ev.end;
  }
  EXPECT_GT(first_ag_end, 0);
  EXPECT_DOUBLE_EQ(first_fwd, first_ag_end);
  EXPECT_NEAR(dp_exposed(ahead), (ahead.iteration_time_s - ahead.stage_times[0].optimizer_s) -
                                     (ahead.pipeline_s - first_ag_end), 1e-9);
  EXPECT_LT(ahead.iteration_time_s, after.iteration_time_s);
  // The same collectives either way.
  EXPECT_NEAR(ahead.stage_times[0].dp_comm_s, after.stage_times[0].dp_comm_s, 1e-12);
}

// optim_grads_params gathers each chunk's parameters before every forward and backward step:
// 4 micro-batches × (forward + backward) × (first layer + rest) = 16 gathers ahead of the 8
// steps; the first forward waits for the embedding's gather only. With sharded gradients
// (optim_grads, optim_grads_params) every backward reduce-scatters its gradients: the 44 buckets
// of the last micro-batch (mb −1, as under optim) and 3 · 44 = 132 tagged with their micro-batch.
TEST_F(OverlapTest, FsdpGathersParametersForEveryStep) {
  const Estimate z1 = estimate(m_, strategy(R"(, "data_parallel_sharding_strategy": "optim")"), sys_);
  const Estimate z2 = estimate(m_, strategy(R"(, "data_parallel_sharding_strategy": "optim_grads")"), sys_);
  const Estimate z3 = estimate(m_, strategy(R"(, "data_parallel_sharding_strategy": "optim_grads_params")"), sys_);
  auto per_mb = [](const Estimate& e) {
    std::vector<TimelineEvent> out;
    for (const auto& ev : e.timeline.events)
      if (ev.stream == Stream::Dp && ev.mb >= 0) out.push_back(ev);
    return out;
  };
  double first_fwd = 1e9;
  for (const auto& ev : z3.timeline.events)
    if (ev.kind == StepKind::Forward) first_fwd = std::min(first_fwd, ev.start);
  EXPECT_TRUE(per_mb(z1).empty());
  EXPECT_EQ(per_mb(z2).size(), 132u);
  const std::vector<TimelineEvent> dp3 = per_mb(z3);
  ASSERT_EQ(dp3.size(), 16u + 132u);
  EXPECT_DOUBLE_EQ(dp3[0].start, 0.0);
  EXPECT_DOUBLE_EQ(first_fwd, dp3[0].end);
  // optim: the reduce-scatter of every gradient (fp32) once, R, then the parameter all-gather
  // after the optimizer (the step's last event). optim_grads: R in each of the 4 micro-batches.
  double gather = 0;
  for (const auto& ev : z1.timeline.events)
    if (ev.stream == Stream::Dp && ev.end == z1.iteration_time_s) gather = ev.end - ev.start;
  const double R = z1.stage_times[0].dp_comm_s - gather;
  EXPECT_GT(R, 0);
  EXPECT_NEAR(z2.stage_times[0].dp_comm_s, gather + 4 * R, 1e-9);
  // Without overlap_grad_reduce each reduce-scatter holds the next step: the pipeline grows by 3 R
  // (the optimizer step differs: optim_grads steps over sharded gradients).
  EXPECT_NEAR(z2.pipeline_s - z1.pipeline_s, 3 * R, 1e-9);
  // optim_grads_params: 8 gathers of every parameter (bf16) and the same 4 R.
  EXPECT_GT(z3.stage_times[0].dp_comm_s, z2.stage_times[0].dp_comm_s + 6 * gather);
  // Sharded weights (18/d bytes per parameter, d = 8) plus the gathered working set: two
  // Llama 3 8B layers in bf16. One layer: q, o 4096² each, k, v 4096·1024 each, MLP
  // 3·4096·14336, two norms of 4096 = 218,112,000 parameters; × 2 layers × 2 bytes = 872,448,000;
  // and the cuBLAS and cuBLASLt workspaces, 2 × 32 MiB.
  const StageMemory& m3 = z3.stages[0];
  EXPECT_NEAR(m3.model_bytes - m3.weight_bytes - m3.grad_bytes - m3.state_bytes, 872448000.0 + 2 * 32 * kMiB, 1e3);
  EXPECT_LT(m3.model_bytes, z2.stages[0].model_bytes);  // 18/8 + working set < 2 + 16/8 bytes per parameter
}

// With overlap_grad_reduce the earlier micro-batches' reduce-scatters run under the following
// steps: optim_grads then adds to the step at most what the dp stream cannot hide.
TEST_F(OverlapTest, FsdpPerMicroBatchReduceScatterOverlaps) {
  const char* o = R"(, "overlap_grad_reduce": true, "data_parallel_sharding_strategy": )";
  const Estimate z1 = estimate(m_, strategy((std::string(o) + R"("optim")").c_str()), sys_);
  const Estimate z2 = estimate(m_, strategy((std::string(o) + R"("optim_grads")").c_str()), sys_);
  const double total1 = z1.stage_times[0].dp_comm_s, total2 = z2.stage_times[0].dp_comm_s;
  EXPECT_GT(total2, 2 * total1);
  // The extra reduce-scatters are all hidden: the pipeline and the exposed DP time do not grow.
  EXPECT_NEAR(z2.pipeline_s, z1.pipeline_s, 1e-9);
  EXPECT_NEAR(dp_exposed(z2), dp_exposed(z1), 1e-9);
}

TEST_F(OverlapTest, TpCommOverlapHidesMostTpCommunication) {
  const Estimate plain = estimate(m_, strategy(R"(, "tp_size": 4)"), sys_);
  const Estimate overlapped = estimate(m_, strategy(R"(, "tp_size": 4, "tp_comm_overlap": true)"), sys_);
  const auto tp = static_cast<size_t>(Group::TP);
  const StageTime& a = plain.stage_times[0];
  const StageTime& b = overlapped.stage_times[0];
  EXPECT_DOUBLE_EQ(a.exposed_comm_s(tp), a.comm_by_group_s[tp]);
  EXPECT_NEAR(b.comm_by_group_s[tp], a.comm_by_group_s[tp], 1e-12);  // the same collectives
  EXPECT_LT(b.exposed_comm_s(tp), 0.5 * a.exposed_comm_s(tp));
  EXPECT_NEAR(b.exposed_comm_s(tp), b.tp_comm_s, 1e-9);
  EXPECT_LT(overlapped.iteration_time_s, plain.iteration_time_s);
}

TEST_F(OverlapTest, ShardingStrategyIsZeroState) {
  EXPECT_EQ(strategy(R"(, "data_parallel_sharding_strategy": "no_shard")").zero_state, 0);
  EXPECT_EQ(strategy(R"(, "data_parallel_sharding_strategy": "optim_grads")").zero_state, 2);
  EXPECT_EQ(strategy(R"(, "data_parallel_sharding_strategy": "optim_grads_params")").zero_state, 3);
  EXPECT_EQ(error_of([&] { (void)strategy(R"(, "data_parallel_sharding_strategy": "optim", "zero_state": 2)"); }),
            "s.json: /zero_state: 2 contradicts data_parallel_sharding_strategy 'optim' (zero_state 1); give one "
            "of the two");
  EXPECT_EQ(error_of([&] { (void)strategy(R"(, "data_parallel_sharding_strategy": "optim_grad")"); }),
            "s.json: /data_parallel_sharding_strategy: unknown value 'optim_grad'; valid values: no_shard, optim, "
            "optim_grads, optim_grads_params; did you mean 'optim_grads'?");
}

// resolve_plan checks a strategy as given: a switch that changes nothing is an issue there (user
// inputs are normalized first, which turns it off: tests/plan/no_effect_test.cpp); what
// Megatron-LM rejects is an issue either way.
TEST_F(OverlapTest, SwitchesThatChangeNothingAreIssuesOfTheStrictCheck) {
  EXPECT_EQ(error_of([&] { (void)resolve_plan(m_, strategy(R"(, "tp_comm_overlap": true)"), sys_, Mode::Default, kSrc); }),
            "s.json: /tp_comm_overlap: changes nothing with tp_size 1 (no tensor-parallel communication); set it to "
            "false");
  EXPECT_EQ(error_of([&] {
              (void)resolve_plan(m_, strategy(R"(, "tp_size": 2, "enable_sequence_parallel": false, "tp_comm_overlap": true)"),
                                 sys_, Mode::Default, kSrc);
            }),
            "s.json: /tp_comm_overlap: needs tensor parallelism with sequence parallelism (TransformerEngine "
            "userbuffers), got tp_size 2, enable_sequence_parallel false");
  EXPECT_EQ(error_of([&] {
              (void)resolve_plan(m_, strategy(R"(, "zero_state": 0, "overlap_param_gather": true)"), sys_,
                                 Mode::Default, kSrc);
            }),
            "s.json: /overlap_param_gather: needs the distributed optimizer's parameter all-gather: zero_state 1 or "
            "2 (data_parallel_sharding_strategy optim or optim_grads), got 0");
  EXPECT_EQ(error_of([&] {
              (void)resolve_plan(m_, strategy(R"(, "tp_size": 8, "overlap_param_gather": true)"), sys_,
                                 Mode::Default, kSrc);
            }),
            "s.json: /overlap_param_gather: changes nothing without data parallelism (dp·cp is 1, and edp for "
            "experts); set it to false");
  EXPECT_EQ(error_of([&] {
              (void)resolve_plan(m_, strategy(R"(, "tp_size": 8, "overlap_grad_reduce": true)"), sys_, Mode::Default,
                                 kSrc);
            }),
            "s.json: /overlap_grad_reduce: changes nothing without data parallelism (dp·cp is 1, and edp for "
            "experts); set it to false");
  // SimuMax accepts it (and ignores it).
  EXPECT_NO_THROW((void)resolve_plan(m_, strategy(R"(, "tp_size": 8, "overlap_grad_reduce": true)"), sys_,
                                     Mode::SimuMax12, kSrc));
}

TEST_F(OverlapTest, NewSwitchesAreNotPartOfSimuMax) {
  EXPECT_EQ(error_of([&] {
              (void)resolve_plan(m_, strategy(R"(, "tp_size": 2, "tp_comm_overlap": true)"), sys_, Mode::SimuMax12,
                                 kSrc);
            }),
            "s.json: /tp_comm_overlap: not part of SimuMax v1.2; remove it, or use the default mode");
  EXPECT_EQ(error_of([&] {
              (void)resolve_plan(m_, strategy(R"(, "data_parallel_sharding_strategy": "optim")"), sys_,
                                 Mode::SimuMax12, kSrc);
            }),
            "s.json: /data_parallel_sharding_strategy: not part of SimuMax v1.2; use zero_state, or use the default "
            "mode");
}

}  // namespace
}  // namespace trainsim
