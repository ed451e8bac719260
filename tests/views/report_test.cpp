// The perf report: the numbers users check first, in the summary and in --json.
#include "test_estimate.h"
#include "views/report.h"

#include <gtest/gtest.h>

#include <sstream>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "inputs/plan_request.h"
#include "system/presets.h"
#include "core/text.h"
#include "core/units.h"
#include "test_presets.h"

namespace trainsim {
namespace {

StrategyInputs plan_on_two_nodes(MfuConvention c) {
  PlanRequest r;
  r.overrides = {{"dp_size", "4", "--dp 4"}};  // 16 GPUs: two nodes, so a straggler factor > 1
  const PlanConfigs p = build_plan(r, "llama3-8b", "tp2-pp2-dp2-zero1");
  StrategyInputs in;
  in.model = p.model;
  in.strategy = p.strategy;
  const ConfigText sys = resolve_config("system", "h100-sxm-80g");
  in.system = load_system(sys.text, sys.source);
  in.take_plan(resolve_plan(in.model, in.strategy, in.system, Mode::Default));
  in.model_source = p.model_source;
  in.strategy_source = p.strategy_source;
  in.system_source = sys.source;
  in.mfu = c;
  in.not_modeled = {"--tp-comm-overlap: TP communication overlapped with GEMMs (userbuffers)"};
  in.ignored = {"--lr"};
  return in;
}

TEST(Report, JsonHasTheNumbersUsersCheckFirst) {
  const StrategyInputs in = plan_on_two_nodes(MfuConvention::Megatron);
  const Estimate e = estimate(in.model, in.strategy, in.system);
  const auto j = nlohmann::json::parse(estimate_to_json(in, e));
  EXPECT_EQ(j["schema_version"], "2.2.0");
  EXPECT_EQ(j["parameter_count"], 8030261248LL);
  EXPECT_EQ(j["active_parameter_count"], 8030261248LL);
  ASSERT_EQ(j["parameters_per_stage"].size(), 2u);
  // 16 layers of 218,112,000 plus the embedding (first) or output layer + final norm (last).
  EXPECT_EQ(j["parameters_per_stage"][0]["parameter_count"], 16 * 218112000LL + 525336576);
  EXPECT_EQ(j["parameters_per_stage"][1]["parameter_count"], 16 * 218112000LL + 525340672);
  EXPECT_EQ(j["mfu_convention"], "megatron");
  EXPECT_EQ(j["mfu"], j["mfu_megatron"]);
  EXPECT_EQ(j["mfu_simumax"].get<double>(), e.mfu);
  // Same time and peak, FLOPs differ by the causal halving: ×1.0668 for Llama 3 8B at 4k.
  EXPECT_NEAR(j["mfu_simumax"].get<double>() / j["mfu_megatron"].get<double>(), 1.0667622897379059, 1e-12);
  EXPECT_GT(e.straggler_ratio, 1.0);
  const StageTime& worst = e.stage_times[0].total_s >= e.stage_times[1].total_s ? e.stage_times[0] : e.stage_times[1];
  EXPECT_DOUBLE_EQ(j["straggler_added_ms"].get<double>(), worst.pipeline_s * (e.straggler_ratio - 1) * 1e3);
  EXPECT_EQ(j["not_modeled"][0], "--tp-comm-overlap: TP communication overlapped with GEMMs (userbuffers)");
  EXPECT_EQ(j["ignored"][0], "--lr");
}

// The memory table's columns add and multiply as they read: peak = weights + grads + optim +
// other + saved + transient, saved = act/mb × in-flight (an interleaved plan holds pieces of its
// virtual chunks: in-flight counts micro-batches of the whole stage, fractional).
TEST(Report, MemoryColumnsAddUpToThePeak) {
  StrategyInputs in;
  in.model = test::preset_model("llama3-70b");
  in.strategy = load_strategy(resolve_config("strategy", "tp2-pp4-vpp2-dp1").text, "tp2-pp4-vpp2-dp1");
  in.system = test::preset_system("h100-sxm-80g");
  in.take_plan(resolve_plan(in.model, in.strategy, in.system, Mode::Default));
  const Estimate e = estimate(in.model, in.strategy, in.system);
  const std::string s = estimate_summary(in, e);
  const size_t at = s.find("memory per stage (GiB)");
  ASSERT_NE(at, std::string::npos);
  std::istringstream rows(s.substr(s.find('\n', at) + 1));
  for (size_t i = 0; i < e.stages.size(); ++i) {
    std::string name;
    double peak, reserved, weights, grads, optim, other, act, in_flight, saved, transient;
    rows >> name >> peak >> reserved >> weights >> grads >> optim >> other >> act >> in_flight >> saved >> transient;
    rows.ignore(1000, '\n');
    EXPECT_EQ(name, e.stages[i].name);
    EXPECT_NEAR(weights + grads + optim + other + saved + transient, peak, 0.03) << name;
    EXPECT_NEAR(act * in_flight, saved, 0.01 * saved + 0.01) << name;
    EXPECT_GT(in_flight, 1.5) << name;  // more than one micro-batch's worth, not the 5-11 pieces
    EXPECT_LT(in_flight, static_cast<double>(e.stages[i].in_flight_micro_batches)) << name;
  }
}

TEST(Report, SummaryLines) {
  const StrategyInputs in = plan_on_two_nodes(MfuConvention::SimuMax);
  const Estimate e = estimate(in.model, in.strategy, in.system);
  const std::string s = estimate_summary(in, e);
  EXPECT_NE(s.find("parameters 8.03 B (8,030,261,248); per stage 4.02 B, 4.02 B\n"), std::string::npos) << s;
  EXPECT_NE(s.find(strprintf("(straggler x%.3f adds ", e.straggler_ratio)), std::string::npos) << s;
  EXPECT_NE(s.find(strprintf("MFU            %10.2f %%  (simumax convention, of the 989 TFLOP/s default peak; megatron: ",
                             e.mfu * 100)),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("warning: given but not modeled (the prediction ignores them): --tp-comm-overlap: "),
            std::string::npos);
}

// How each op class and collective answered. Datasheet preset: every GEMM and attention lookup
// takes its class default, named with its value, and every collective the formula. The measured
// preset without its attention model: the attention lookups take the datasheet preset's
// defaults (0.70, 0.60), named as such; its GEMMs and NVLink collectives come from its models.
TEST(Report, HowEachClassAndCollectiveAnswered) {
  StrategyInputs in = plan_on_two_nodes(MfuConvention::Megatron);
  const auto count = [](const Estimate& e, OpClass c, EfficiencySource s) {
    return static_cast<long long>(e.efficiency_by_class[op_index(c)][static_cast<size_t>(s)]);
  };
  const Estimate d = estimate(in.model, in.strategy, in.system);
  const std::string ds = estimate_summary(in, d);
  EXPECT_NE(ds.find(strprintf("           lookups by class: matmul %lld default (0.70); sdp_fwd %lld default (0.70); "
                              "sdp_bwd %lld default (0.60)\n",
                              count(d, OpClass::Matmul, EfficiencySource::Default),
                              count(d, OpClass::SdpFwd, EfficiencySource::Default),
                              count(d, OpClass::SdpBwd, EfficiencySource::Default))),
            std::string::npos)
      << ds;
  EXPECT_GT(count(d, OpClass::Matmul, EfficiencySource::Default), 0);
  const auto& ag = d.collectives_by_kind[static_cast<size_t>(Collective::AllGather)];
  EXPECT_GT(ag[static_cast<size_t>(EfficiencySource::Default)], 0);
  EXPECT_NE(ds.find(strprintf("all_gather %lld formula;", static_cast<long long>(ag[0]))), std::string::npos) << ds;

  const ConfigText sys = resolve_config("system", "h100-sxm-80g-measured");
  in.system = load_system(sys.text, sys.source);
  for (const char* op : {"sdp_fwd", "sdp_bwd"}) in.system.ops.at(op).point_model = nullptr;
  const Estimate m = estimate(in.model, in.strategy, in.system);
  const std::string ms = estimate_summary(in, m);
  EXPECT_EQ(count(m, OpClass::Matmul, EfficiencySource::Default), 0);
  EXPECT_NE(ms.find(strprintf("; sdp_fwd %lld default (0.70 of h100-sxm-80g); sdp_bwd %lld default (0.60 of "
                              "h100-sxm-80g)\n",
                              count(m, OpClass::SdpFwd, EfficiencySource::Default),
                              count(m, OpClass::SdpBwd, EfficiencySource::Default))),
            std::string::npos)
      << ms;
  // The JSON has the same counts.
  const nlohmann::json j = nlohmann::json::parse(estimate_to_json(in, m));
  EXPECT_EQ(j["efficiency_by_class"]["sdp_fwd"]["default"], count(m, OpClass::SdpFwd, EfficiencySource::Default));
  EXPECT_EQ(j["efficiency_by_class"]["matmul"]["default"], 0);
  EXPECT_EQ(j["collectives_by_kind"]["all_gather"]["formula"],
            m.collectives_by_kind[static_cast<size_t>(Collective::AllGather)][0]);
}

// The fit verdict per stage: h100-sxm-80g has 79.65 GiB. Outside PyTorch each rank of tp 2, pp 2,
// dp 4 holds the CUDA context (0.5 GiB) and three NCCL communicators (tp, pp and dp groups of more
// than one rank) of 32 channels × 9.1875 MiB = 294 MiB: 0.5 + 882/1024 = 1.361328125 GiB, so each
// stage's headroom is 78.288671875 GiB less its reserved peak.
TEST(Report, FitVerdictPerStage) {
  const StrategyInputs in = plan_on_two_nodes(MfuConvention::Megatron);
  const Estimate e = estimate(in.model, in.strategy, in.system);
  const auto j = nlohmann::json::parse(estimate_to_json(in, e));
  const double outside = 0.5 + 882.0 / 1024, limit = 79.65 - outside;
  EXPECT_NEAR(j["memory_limit_gib"].get<double>(), limit, 1e-9);
  EXPECT_NEAR(j["unusable_memory_gib"].get<double>(), outside, 1e-12);
  ASSERT_EQ(j["stages"].size(), 2u);
  double least = 1e9;
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_NEAR(j["stages"][i]["non_tensor_memory_gib"].get<double>(), outside, 1e-12);
    const double headroom = limit - e.stages[i].peak_reserved_bytes / kGiB;
    EXPECT_NEAR(j["stages"][i]["memory_headroom_gib"].get<double>(), headroom, 1e-9);
    EXPECT_EQ(j["stages"][i]["fits"], headroom >= 0);
    least = std::min(least, headroom);
  }
  EXPECT_NEAR(j["memory_headroom_gib"].get<double>(), least, 1e-9);
  EXPECT_EQ(j["fits"], true);
  const std::string s = estimate_summary(in, e);
  const StageMemory& worst = j["stages"][0]["memory_headroom_gib"] < j["stages"][1]["memory_headroom_gib"]
                                 ? e.stages[0] : e.stages[1];
  EXPECT_NE(s.find(strprintf("fit        FITS: peak reserved %.2f GiB vs limit 78.29 GiB (device 79.65 − 1.36 outside "
                             "PyTorch: CUDA context, NCCL buffers)",
                             worst.peak_reserved_bytes / kGiB)),
            std::string::npos)
      << s;
  // Compat mode: SimuMax's flat 6 GiB.
  const Estimate c = estimate(in.model, in.strategy, in.system, nullptr, Mode::SimuMax12);
  const auto jc = nlohmann::json::parse(estimate_to_json(in, c));
  EXPECT_NEAR(jc["memory_limit_gib"].get<double>(), 73.65, 1e-9);
  EXPECT_NEAR(jc["unusable_memory_gib"].get<double>(), 6, 1e-12);
  EXPECT_NE(estimate_summary(in, c).find("(device 79.65 − unusable 6.00)"), std::string::npos);
}

}  // namespace
}  // namespace trainsim
