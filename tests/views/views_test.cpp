// Breakdowns, the memory timeline CSV and the HTML report: views that must agree with the estimate.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_estimate.h"
#include "inputs/plan_request.h"
#include "system/presets.h"
#include "core/text.h"
#include "views/report.h"
#include "test_errors.h"
#include "test_presets.h"
#include "estimate/fit.h"
#include "views/axis.h"
#include "views/breakdown.h"
#include "views/html_report.h"
#include "views/memory_csv.h"
#include "views/step_ops.h"
#include "views/sweep.h"
#include "views/predict.h"

namespace trainsim {
namespace {

StrategyInputs inputs(const char* model, const char* strategy) {
  const PlanConfigs p = build_plan(PlanRequest{}, model, strategy);
  StrategyInputs in;
  in.model = p.model;
  in.strategy = p.strategy;
  in.system = test::preset_system("h100-sxm-80g");
  in.take_plan(resolve_plan(in.model, in.strategy, in.system, Mode::Default));
  in.model_source = p.model_source;
  in.strategy_source = p.strategy_source;
  in.system_source = "h100-sxm-80g";
  return in;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Breakdown, LayerTypesAddUpToTheStageTimes) {
  const StrategyInputs in = inputs("llama3-70b", "tp8-pp4-dp2-zero1-full-recompute");
  const Estimate e = estimate(in.model, in.strategy, in.system);
  const std::vector<StageBreakdown> b = stage_breakdowns(e);
  ASSERT_EQ(b.size(), 4u);
  double fwd = 0, bwd = 0, rec = 0, comm = 0;
  for (const BreakdownRow& r : b[0].by_layer_type) {
    fwd += r.fwd_s;
    bwd += r.bwd_s;
    rec += r.recompute_s;
    comm += r.comm_s;
  }
  const StageTime& st = e.stage_times[0];  // first stage = pp rank 0
  EXPECT_NEAR(fwd, st.fwd_compute_s, 1e-9);
  EXPECT_NEAR(bwd, st.bwd_compute_s, 1e-9);
  EXPECT_NEAR(rec, st.recompute_s, 1e-9);
  EXPECT_NEAR(comm, st.tp_comm_s, 1e-9);
  // First stage: the embedding and 20 dense layers (80 layers over 4 stages).
  ASSERT_EQ(b[0].by_layer_type.size(), 2u);
  EXPECT_EQ(b[0].by_layer_type[0].layer_type, "embedding");
  EXPECT_EQ(b[0].by_layer_type[1].layer_type, "dense_layer");
  EXPECT_EQ(b[0].by_layer_type[1].instances, 20);
  for (size_t i = 1; i < b[0].by_op.size(); ++i) EXPECT_GE(b[0].by_op[i - 1].total_s(), b[0].by_op[i].total_s());
  for (const BreakdownRow& r : b[0].by_op)
    if (r.layer_type == "dense_layer") {
      EXPECT_EQ(r.instances, 20);
    }
}

TEST(Breakdown, JsonCarriesTheRowsAndMemoryClasses) {
  const StrategyInputs in = inputs("llama3-70b", "tp8-pp4-dp2-zero1-full-recompute");
  const Estimate e = estimate(in.model, in.strategy, in.system);
  const auto j = nlohmann::json::parse(estimate_to_json(in, e));
  ASSERT_EQ(j["breakdown"]["time_per_stage"].size(), 4u);
  const auto& mem = j["breakdown"]["memory_per_stage"][0];
  double sum = 0;
  for (const char* k : {"weights_gib", "gradients_gib", "optimizer_states_gib", "other_static_gib", "activations_gib",
                        "allocator_reserve_gib"})
    sum += mem[k].get<double>();
  EXPECT_NEAR(sum, j["stages"][0]["peak_reserved_gib"].get<double>(), 1e-9);
  const auto& top = j["breakdown"]["time_per_stage"][0]["by_op"][0];
  EXPECT_GT(top["total_ms"].get<double>(), 0);
  EXPECT_TRUE(top["efficiency_source"] == "measured" || top["efficiency_source"] == "fallback");
}

// The CSV export (perf --breakdown op --csv FILE): a header, then one row per stage and op, the
// numbers of the summary's table in full precision.
TEST(Breakdown, CsvHasOneRowPerStageAndOp) {
  const StrategyInputs in = inputs("mixtral-8x7b", "ep8-pp1-dp8-moe");
  const Estimate e = estimate(in.model, in.strategy, in.system);
  const std::string csv = breakdown_csv(e, BreakdownLevel::Op);
  size_t rows = 0;
  for (const StageBreakdown& b : stage_breakdowns(e)) rows += b.by_op.size();
  EXPECT_EQ(count(csv, "\n"), rows + 1);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "stage,layer_type,op,count,fwd_ms,bwd_ms,recompute_ms,comm_ms,total_ms,tflop,gb,efficiency,efficiency_source");
  const BreakdownRow top = stage_breakdowns(e)[0].by_op[0];  // a copy: the breakdowns are a temporary
  EXPECT_NE(csv.find(strprintf("\n0,%s,%s,%lld,%.6g,", top.layer_type.c_str(), top.op.c_str(),
                               static_cast<long long>(top.instances), top.fwd_s * 1e3)),
            std::string::npos)
      << csv;
  EXPECT_EQ(csv_escape("a,\"b\"\nc"), "\"a,\"\"b\"\" c\"");
}

TEST(Breakdown, UnknownLevelIsAUsageError) {
  EXPECT_EQ(test::error_of<UsageError>([] { (void)parse_breakdown_level("ops", "perf: --breakdown"); }),
            "perf: --breakdown: unknown level 'ops'; valid values: layer, op; did you mean 'op'?");
}

TEST(MemoryCsv, OnePeakRowPerStageWithWhatWasLive) {
  const StrategyInputs in = inputs("llama3-70b", "tp8-pp4-dp2-zero1-full-recompute");
  const Estimate e = estimate(in.model, in.strategy, in.system);
  const std::string csv = memory_timeline_csv(e, -1);
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "pp_rank,time_ms,allocated_gib,after,chunk,micro_batch,peak,live_at_peak");
  EXPECT_EQ(count(csv, ",peak,c"), 4u);  // one marked row per stage (the header names the column)
  const MemoryTrack t = memory_track(e, 3, -1);
  // The last stage runs one micro-batch at a time (1F1B): one set of activations live at its peak.
  ASSERT_EQ(t.live_at_peak.size(), 1u);
  EXPECT_NE(csv.find(strprintf(",%.6f,", t.peak_bytes / (1024.0 * 1024 * 1024))), std::string::npos);
  // Steady-state passes as one row each: fewer rows, the same peaks.
  const std::string coarse = memory_timeline_csv(e, 2);
  EXPECT_LT(coarse.size() * 4, csv.size());
  for (int32_t r = 0; r < 4; ++r) EXPECT_NEAR(memory_track(e, r, 2).peak_bytes, memory_track(e, r, -1).peak_bytes, 1.0);
}

TEST(HtmlReport, MixtralPageHasTheHeadlineAndFourPlots) {
  const StrategyInputs in = inputs("mixtral-8x7b", "ep8-pp1-dp8-moe");
  const Estimate e = estimate(in.model, in.strategy, in.system);
  const std::string html = perf_html(in, e);
  EXPECT_EQ(count(html, "<svg "), 4u);
  for (const char* id : {"time-per-stage", "memory-per-stage", "pipeline-gantt", "top-ops"})
    EXPECT_NE(html.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  EXPECT_NE(html.find(strprintf("<td id=\"step-time\">%.2f ms</td>", e.iteration_time_s * 1e3)), std::string::npos);
  EXPECT_NE(html.find("class=\"limit\""), std::string::npos);      // each stage's fit limit
  EXPECT_NE(html.find("class=\"reference\""), std::string::npos);  // device memory line
  EXPECT_EQ(html.find("<script"), std::string::npos);          // nothing to run, nothing to fetch
  EXPECT_EQ(html.find("http://www.w3.org/2000/svg"), html.find("http"));  // no other URL
}

// Round steps of 1, 2 or 5 × 10^k, about five ticks, covering the range.
TEST(Axis, NiceTicksCoverTheRangeWithRoundSteps) {
  const Ticks a = nice_ticks(0, 3936.1);  // raw step 787 → 1000
  EXPECT_EQ(a.values, (std::vector<double>{0, 1000, 2000, 3000, 4000}));
  EXPECT_EQ(tick_label(a, 4000), "4000");
  const Ticks b = nice_ticks(15076, 30151);  // raw step 3015 → 5000, from 15000
  EXPECT_EQ(b.values, (std::vector<double>{15000, 20000, 25000, 30000, 35000}));
  const Ticks c = nice_ticks(0, 0.9);  // raw step 0.18 → 0.2, one decimal
  EXPECT_DOUBLE_EQ(c.step, 0.2);
  EXPECT_EQ(c.values.size(), 6u);
  EXPECT_EQ(tick_label(c, c.values[3]), "0.6");
  const Ticks d = nice_ticks(73.65, 73.65);  // an empty range is one step wide
  EXPECT_LT(d.lo, 73.65);
  EXPECT_GT(d.hi, 73.65);
}

// The memory chart splits the activations as the memory model counts them and marks each
// stage's fit limit (the verdict's: reserved peak + headroom); the headline states the verdict.
TEST(HtmlReport, MemoryChartMarksTheVerdictsLimitAndTheTransientPeak) {
  const StrategyInputs in = inputs("llama3-70b", "tp2-pp4-vpp2-dp1");  // interleaved, does not fit on 80 GiB
  const Estimate e = estimate(in.model, in.strategy, in.system);
  const std::string html = perf_html(in, e);
  const FitRule rule = fit_rule(in.system, e.mode);
  const FitVerdict v = fit_verdict(e, rule);
  ASSERT_TRUE(v.known);
  EXPECT_FALSE(v.fits);
  EXPECT_NE(html.find(strprintf("DOES NOT FIT, %.2f GiB over the limit", -v.headroom_bytes / kGiB)), std::string::npos);
  for (const StageMemory& m : e.stages) {
    const double limit = m.peak_reserved_bytes + fit_verdict(m, rule).headroom_bytes;
    EXPECT_NE(html.find(strprintf("%s: fit limit %.2f GiB", m.name.c_str(), limit / kGiB)), std::string::npos) << m.name;
    // In flight: far more than the transient of the running op (the interleaved pieces held).
    EXPECT_GT(m.peak_transient_bytes, 0);
    EXPECT_GT(m.peak_alloc_bytes - m.model_bytes - m.peak_transient_bytes, 10 * m.peak_transient_bytes) << m.name;
  }
  EXPECT_NE(html.find("activations saved (micro-batches in flight)"), std::string::npos);
  EXPECT_NE(html.find("device memory 79.7 GiB"), std::string::npos);
  // The timeline's legend lists only what is drawn: no weight-gradient pass, DP op or straggler here.
  EXPECT_EQ(html.find(">backward_weight<"), std::string::npos);
  EXPECT_EQ(html.find(">straggler<"), std::string::npos);
  EXPECT_NE(html.find(">p2p<"), std::string::npos);
  EXPECT_EQ(count(html, "class=\"axis\""), 4u);  // every plot has its axis
}

// trainsim sweep: every combination is the prediction perf makes with the same --set values; a
// combination that is no plan is a row with its error; a misspelled key is refused up front.
TEST(Sweep, PointsArePerfsPredictions) {
  const std::vector<SweepAxis> axes = {parse_sweep_axis("accelerator.mem_gbs=40,141"),
                                       parse_sweep_axis("tp_size=2,3")};
  const ConfigText sys = resolve_config("system", kDefaultSystem);
  const std::vector<SweepPoint> points = run_sweep(PlanRequest{}, kDefaultModel, kDefaultStrategy, sys,
                                                   Mode::Default, axes);
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[1].values, (std::vector<std::string>{"40", "3"}));
  EXPECT_NE(points[1].error.find("/tp_size: 3 does not divide"), std::string::npos) << points[1].error;
  PlanRequest r;
  r.overrides = {parse_set_option("accelerator.mem_gbs=141"), parse_set_option("tp_size=2")};
  const Prediction pr = predict(r, kDefaultModel, kDefaultStrategy, sys, MfuConvention::Megatron, Mode::Default);
  EXPECT_TRUE(points[2].error.empty());
  EXPECT_DOUBLE_EQ(points[2].step_ms, pr.estimate.iteration_time_s * 1e3);
  EXPECT_DOUBLE_EQ(points[2].peak_reserved_gib, pr.estimate.peak_reserved_bytes() / kGiB);
  // The device size moves the headroom only: 141 − 40 GiB.
  EXPECT_NEAR(points[2].headroom_gib - points[0].headroom_gib, 101, 1e-9);
  const std::string csv = sweep_csv(axes, points);
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "accelerator.mem_gbs,tp_size,step_time_ms,mfu,peak_reserved_gib,headroom_gib,fits,fit_state,error");
  EXPECT_EQ(count(csv, "\n"), 5u);
  EXPECT_NE(sweep_html(axes, points, "t").find("id=\"sweep-heatmap\""), std::string::npos);
  const std::vector<SweepPoint> line = run_sweep(PlanRequest{}, kDefaultModel, kDefaultStrategy, sys, Mode::Default,
                                                 {axes[0]});
  ASSERT_EQ(line.size(), 2u);
  EXPECT_NE(sweep_html({axes[0]}, line, "t").find("id=\"sweep-line\""), std::string::npos);
  EXPECT_EQ(test::error_of<Error>([] { (void)parse_sweep_axis("tp=1,2"); }).rfind("--set: unknown key 'tp'", 0), 0u);
  EXPECT_EQ(test::error_of<Error>([] { (void)parse_sweep_axis("tp_size"); }),
            "--vary: expected KEY=V1,V2,..., got 'tp_size'");
}

TEST(HtmlReport, ParetoFrontKeepsTheUndominated) {
  std::vector<Candidate> c(5);
  const double t[] = {3, 1, 2, 4, 2.5}, m[] = {1, 5, 2, 0.5, 3};
  for (size_t i = 0; i < c.size(); ++i) {
    c[i].iteration_time_s = t[i];
    c[i].peak_bytes = m[i];
  }
  // (2.5 s, 3 B) is beaten by (2 s, 2 B); the others trade time for memory.
  EXPECT_EQ(pareto_front(c), (std::vector<size_t>{1, 2, 0, 3}));
  EXPECT_EQ(html_escape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
}

}  // namespace
}  // namespace trainsim
