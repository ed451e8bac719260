// The Chrome trace and the step expansion it draws: structure, span, and agreement with the estimate.
#include "test_estimate.h"
#include "views/trace.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "inputs/plan_request.h"
#include "test_presets.h"
#include "views/step_ops.h"

namespace trainsim {
namespace {

Estimate llama70b_tp8_pp4_dp2() {
  const PlanConfigs p = build_plan(PlanRequest{}, "llama3-70b", "tp8-pp4-dp2-zero1-full-recompute");
  return estimate(p.model, p.strategy, test::preset_system("h100-sxm-80g"));
}

TEST(Trace, Llama70bHasAProcessPerStageAndAThreadPerStream) {
  const Estimate e = llama70b_tp8_pp4_dp2();
  TraceStats stats;
  const auto doc = nlohmann::json::parse(trace_json(e, {}, &stats));
  std::set<int> pids;
  std::set<std::pair<int, int>> threads;
  std::map<std::string, int> phases;
  double first = 1e300, last = 0;
  size_t counters = 0;
  for (const auto& ev : doc["traceEvents"]) {
    if (ev["ph"] == "C") ++counters;
    if (ev["ph"] != "X") continue;
    pids.insert(ev["pid"].get<int>());
    threads.insert({ev["pid"].get<int>(), ev["tid"].get<int>()});
    EXPECT_GE(ev["dur"].get<double>(), 0);
    first = std::min(first, ev["ts"].get<double>());
    last = std::max(last, ev["ts"].get<double>() + ev["dur"].get<double>());
    if (ev["args"].contains("phase")) ++phases[ev["args"]["phase"].get<std::string>()];
  }
  EXPECT_EQ(pids.size(), 4u);
  // compute, tp comm, blocking p2p, dp comm and the host on each of the four stages.
  EXPECT_EQ(threads.size(), 20u);
  EXPECT_EQ(first, 0);
  EXPECT_NEAR(last, e.iteration_time_s * 1e6, e.iteration_time_s * 1e6 * 1e-9);
  EXPECT_GT(phases["forward"], 0);
  EXPECT_GT(phases["backward"], 0);
  EXPECT_GT(phases["recompute"], 0);  // full recompute
  // 32 micro-batches, 2 drawn op by op at each end: 28 forward and 28 backward passes per stage whole.
  EXPECT_EQ(stats.aggregated_steps, 4 * 28 * 2);
  EXPECT_GT(counters, 4u);
  EXPECT_EQ(stats.events, doc["traceEvents"].size());
  EXPECT_EQ(doc["otherData"]["aggregated_passes"], 4 * 28 * 2);
}

TEST(Trace, DetailChoosesWhichPassesAreDrawnOpByOp) {
  const PlanConfigs p = build_plan(PlanRequest{}, "llama3-8b", "tp2-pp2-dp2-zero1");
  const Estimate e = estimate(p.model, p.strategy, test::preset_system("h100-sxm-80g"));
  TraceStats all, none;
  const std::string a = trace_json(e, {-1}, &all), b = trace_json(e, {0}, &none);
  EXPECT_EQ(all.aggregated_steps, 0);
  EXPECT_EQ(none.aggregated_steps, 2 * 2 * e.micro_batches);  // forward and backward, 2 stages
  EXPECT_GT(all.events, 10 * none.events);
  EXPECT_GT(a.size(), 10 * b.size());
}

// Ring context parallelism (cp_comm_type p2p): the KV exchanges hidden under the blockwise
// attention are drawn on the cp thread beside the attention kernel; only what sticks out (the
// backward's last dK, dV return) comes after it.
TEST(Trace, RingExchangeRunsBesideTheAttention) {
  const PlanConfigs p = build_plan(PlanRequest{}, "llama3-70b", "tp8-cp2-pp1-dp1-p2p");
  const Estimate e = estimate(p.model, p.strategy, test::preset_system("h100-sxm-80g"));
  const auto doc = nlohmann::json::parse(trace_json(e, {}));
  std::vector<nlohmann::json> compute, hidden, exposed;
  for (const auto& ev : doc["traceEvents"]) {
    if (ev["ph"] != "X" || !ev["args"].contains("op")) continue;
    if (ev["tid"] == 1) compute.push_back(ev);
    if (ev["args"].value("group", "") != "cp") continue;
    (ev["args"]["exposed"].get<bool>() ? exposed : hidden).push_back(ev);
  }
  ASSERT_FALSE(hidden.empty());
  ASSERT_FALSE(exposed.empty());
  // The kernel slice of the same op, micro-batch and phase that holds the event's start.
  const auto attention = [&](const nlohmann::json& c) -> const nlohmann::json* {
    for (const auto& k : compute)
      if (k["args"]["op"] == c["args"]["op"] && k["args"]["micro_batch"] == c["args"]["micro_batch"] &&
          k["args"]["phase"] == c["args"]["phase"] && k["ts"].get<double>() <= c["ts"].get<double>() + 1e-6 &&
          c["ts"].get<double>() < k["ts"].get<double>() + k["dur"].get<double>())
        return &k;
    return nullptr;
  };
  std::set<std::string> phases;
  for (const auto& c : hidden) {
    const nlohmann::json* k = attention(c);
    ASSERT_NE(k, nullptr) << c.dump();
    EXPECT_LE(c["ts"].get<double>() + c["dur"].get<double>(), (*k)["ts"].get<double>() + (*k)["dur"].get<double>() + 1e-6);
    phases.insert(c["args"]["phase"].get<std::string>());
  }
  EXPECT_TRUE(phases.count("forward") && phases.count("backward"));
  // Exposed: the backward's tail, right after its attention kernel.
  for (const auto& c : exposed) {
    EXPECT_EQ(c["args"]["phase"], "backward");
    EXPECT_EQ(c["args"]["op"], hidden.front()["args"]["op"]);
  }
}

// DP buckets overlapped with the backward (overlap_grad_reduce) are drawn hidden; what runs after
// the pipeline (the last buckets, the parameter all-gather after the optimizer) exposed. The two
// add up to the stage's hidden and exposed DP time; without the overlap nothing is hidden (pp 1:
// every bucket waits for the last backward, which ends the pipeline).
TEST(Trace, DpBucketsUnderTheBackwardAreHidden) {
  PlanConfigs p = build_plan(PlanRequest{}, "llama3-8b", "tp1-pp1-dp8-zero1");
  p.model.layer_num = 4;
  for (bool overlap : {true, false}) {
    p.strategy.overlap_grad_reduce = overlap;
    const Estimate e = estimate(p.model, p.strategy, test::preset_system("h100-sxm-80g"));
    const auto doc = nlohmann::json::parse(trace_json(e, {}));
    double first = e.pipeline_s, hidden = 0, exposed = 0;
    for (const TimelineEvent& ev : e.timeline.events)
      if (is_pass(ev)) first = std::min(first, ev.start);
    for (const auto& ev : doc["traceEvents"]) {
      if (ev["ph"] != "X" || ev["name"] != "gradient reduce / param gather") continue;
      const double start = ev["ts"].get<double>() * 1e-6, end = start + ev["dur"].get<double>() * 1e-6;
      if (ev["args"]["exposed"].get<bool>()) {
        EXPECT_TRUE(end <= first + 1e-12 || start >= e.pipeline_s - 1e-12) << ev.dump();
        exposed += end - start;
      } else {
        EXPECT_GE(start, first - 1e-12);
        EXPECT_LE(end, e.pipeline_s + 1e-12);
        hidden += end - start;
      }
    }
    const StageTime& st = e.stage_times[0];
    const auto dp = static_cast<size_t>(Group::DP);
    EXPECT_NEAR(exposed, st.exposed_comm_s(dp), 1e-9);
    EXPECT_NEAR(hidden, st.hidden_comm_by_group_s[dp], 1e-9);
    EXPECT_NEAR(hidden + exposed, st.comm_by_group_s[dp], 1e-9);
    if (overlap) {
      EXPECT_GT(hidden, 0.5 * st.comm_by_group_s[dp]);
    } else {
      EXPECT_EQ(hidden, 0);
    }
  }
}

TEST(StepOps, OpsTileTheStepAndSumToTheStageTimes) {
  const Estimate e = llama70b_tp8_pp4_dp2();
  ASSERT_EQ(e.ranks.size(), 4u);
  double fwd = 0, bwd = 0;
  for (const OpCost& o : e.ranks[0].chunks[0]) {
    fwd += o.fwd_total_s();
    bwd += o.bwd_total_s();
  }
  // The first stage's per-micro-batch pass times are sums of the same op costs.
  EXPECT_NEAR(fwd, e.stage_times[0].fwd_per_mb_s, 1e-12);
  EXPECT_NEAR(bwd, e.stage_times[0].bwd_per_mb_s, 1e-12);
  for (const TimelineEvent& ev : e.timeline.events) {
    if (ev.rank != 1 || ev.mb != 0 || !is_pass(ev)) continue;
    const std::vector<OpSlice> slices = expand_step(e, ev);
    ASSERT_FALSE(slices.empty());
    EXPECT_DOUBLE_EQ(slices.front().start, ev.start);
    EXPECT_DOUBLE_EQ(slices.back().end, ev.end);
    for (size_t i = 1; i < slices.size(); ++i) EXPECT_DOUBLE_EQ(slices[i].start, slices[i - 1].end);
    // Backward: the head's ops come first (no head on a middle stage: the last layer's recompute).
    if (ev.kind == StepKind::Backward) {
      EXPECT_EQ(slices.front().phase, OpPhase::Recompute);
    }
  }
}

TEST(StepOps, MemoryPeakHoldsTheMicroBatchesInFlight) {
  const Estimate e = llama70b_tp8_pp4_dp2();
  // 1F1B: stage 0 holds pp = 4 micro-batches' activations before its first backward frees one.
  const MemoryTrack t = memory_track(e, 0, 2);
  const RankProfile& p = e.ranks[0];
  EXPECT_NEAR(t.peak_bytes, p.model_bytes + 4 * p.chunk_cache_bytes[0], 1.0);
  EXPECT_EQ(t.live_at_peak.size(), 4u);
  EXPECT_DOUBLE_EQ(t.points.front().bytes, p.model_bytes);
  EXPECT_NEAR(t.points.back().bytes, p.model_bytes, 1.0);  // all freed at the end of the step
  // The estimate's stage peak adds the transient peak of one micro-batch on top of what is saved.
  EXPECT_LE(t.peak_bytes, e.stages[0].peak_alloc_bytes);
}

}  // namespace
}  // namespace trainsim
