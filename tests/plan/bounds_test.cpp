// Work bounds of a plan (checked before anything is allocated) and finite results.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <utility>

#include "test_estimate.h"
#include "system/presets.h"
#include "plan/validate.h"
#include "core/error.h"
#include "estimate/estimate.h"
#include "estimate/finite.h"
#include "views/report.h"
#include "test_presets.h"

namespace trainsim {
namespace {

StrategyConfig strategy(int64_t pp, int64_t vpp, int64_t mbc) {
  StrategyConfig s;
  s.seq_len = 4096;
  s.micro_batch_size = 1;
  s.micro_batch_num = mbc;
  s.world_size = 2 * pp;
  s.tp_size = 2;
  s.pp_size = pp;
  s.interleaving_size = vpp;
  s.pp_comm_async = vpp == 1;
  return s;
}

// Before: replay allocated ~144 bytes × pp × micro-batches with no limit (pp 4096 × mbc 2^20
// reader maxima: ~600 GB).
TEST(PlanBoundsTest, PipelineSlotsAreBoundedBeforeReplay) {
  const ModelConfig m = test::preset_model("llama3-8b");
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  EXPECT_TRUE(validate_plan(m, strategy(4, 2, 131072), sys, {}).empty());  // 4·2·131072 = 2^20
  const auto issues = validate_plan(m, strategy(4, 2, 131073), sys, {"m", "s.json", "y"});
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].str(), "s.json: /micro_batch_num: pp_size·interleaving_size·micro_batch_num = 1048584 is "
                             "above the limit 1048576; use fewer, larger micro-batches");
  try {
    (void)estimate(m, strategy(4, 2, 1 << 20), sys);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.issues().at(0).path, "/micro_batch_num");
  }
}

TEST(PlanBoundsTest, LayerExpertProductIsBounded) {
  ModelConfig m = test::preset_model("mixtral-8x7b");
  m.layer_num = 1024;
  m.expert_num = 16384;  // each within the reader's maxima; 2^24 pairs is the limit
  StrategyConfig s = strategy(1, 1, 1);
  s.tp_size = 1;
  s.world_size = 8;
  auto issues = validate_plan(m, s, test::preset_system("h100-sxm-80g"), {"m.json", "s", "y"});
  EXPECT_TRUE(std::none_of(issues.begin(), issues.end(), [](const Issue& i) { return i.path == "/expert_num"; }));
  m.expert_num = 16385;
  issues = validate_plan(m, s, test::preset_system("h100-sxm-80g"), {"m.json", "s", "y"});
  ASSERT_FALSE(issues.empty());
  EXPECT_EQ(issues[0].str(), "m.json: /expert_num: layer_num·expert_num = 16778240 is above the limit 16777216");
}

// Before: absurd but positive system numbers (a 1e300 GB/s link, 1e-300 efficiency) gave inf or
// NaN step times and exit 0.
TEST(FiniteResultTest, NonFiniteEstimateNamesTheInputs) {
  Estimate e;
  e.iteration_time_s = std::numeric_limits<double>::infinity();
  try {
    require_finite(e, {"m.json", "s.json", "y.json"});
    FAIL() << "no error";
  } catch (const Error& err) {
    EXPECT_STREQ(err.what(), "the prediction is not finite (iteration_time_s = inf): a number in the inputs is out "
                             "of any realistic range; check model m.json, strategy s.json and system y.json");
  }
  e.iteration_time_s = 1;
  e.mfu = std::nan("");
  EXPECT_THROW(require_finite(e, {}), Error);
  e.mfu = 0.5;
  EXPECT_NO_THROW(require_finite(e, {}));
}

// Before: 1e300 TFLOPS and a 1e300 GiB device were accepted (1e300 ms step time, "inf GiB").
TEST(SystemRangeTest, AbsurdSystemNumbersAreRejectedAtLoad) {
  auto doc = nlohmann::json::parse(resolve_config("system", "h100-sxm-80g").text);
  doc["accelerator"]["op"]["matmul"]["tflops"] = 1e300;
  doc["accelerator"]["mem_gbs"] = 1e300;
  doc["accelerator"]["bandwidth"]["default"]["efficient_factor"] = 1e-300;
  try {
    (void)load_system(doc.dump(), "y.json");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "y.json: /accelerator/mem_gbs: must be at most 1e+06 in magnitude, got 1e+300\n"
                           "y.json: /accelerator/op/matmul/tflops: must be at most 1e+06 in magnitude, got 1e+300\n"
                           "y.json: /accelerator/bandwidth/default/efficient_factor: must be 0 or at least 1e-06, got 1e-300");
  }
}

// Before: a file name that is not UTF-8 ended `search --json` in "internal error" (JSON dump).
TEST(SystemRangeTest, JsonReportsReplaceNonUtf8Names) {
  StrategyInputs in;
  in.model = test::preset_model("llama3-8b");
  in.strategy = load_strategy(resolve_config("strategy", "tp2-pp2-dp2-zero1").text, "s");
  in.system = test::preset_system("h100-sxm-80g");
  in.take_plan(resolve_plan(in.model, in.strategy, in.system, Mode::Default));
  in.model_source = "m\xff.json";
  in.strategy_source = "s.json";
  in.system_source = "y.json";
  const Estimate e = estimate(in.model, in.strategy, in.system);
  std::string json;
  ASSERT_NO_THROW(json = estimate_to_json(in, e));
  EXPECT_NE(json.find("m\xef\xbf\xbd.json"), std::string::npos);  // U+FFFD
}

// A system may fit collective times that go below zero for small groups (a negative
// fixed_latency_us_by_comm_num or offset is a fitted number, accepted at load); once an internal
// error ("op of negative duration"), such ops now replay as issued. The default plan (tp2 pp2
// dp2) with −300 µs and −100 µs for the 2-rank TP/DP collectives: the values of the pipeline
// replay that accepted them before the engine asserted durations (503.085 ms, 808.987 ms).
TEST(SystemRangeTest, NegativeCollectiveTimesReplay) {
  const ModelConfig m = test::preset_model("llama3-8b");
  const StrategyConfig s = load_strategy(resolve_config("strategy", "tp2-pp2-dp2-zero1").text, "s");
  for (const auto& [us, ms] : {std::pair{-300.0, 503.085273781112}, std::pair{-100.0, 808.9873840394948}}) {
    auto doc = nlohmann::json::parse(resolve_config("system", "h100-sxm-80g").text);
    for (const char* op : {"all_reduce", "reduce_scatter", "all_gather"})
      doc["networks"]["high_intra_node"]["op"][op]["fixed_latency_us_by_comm_num"] = {{"2", us}};
    doc["host"].erase("framework");  // the device streams alone, as when the values were taken
    const SystemConfig sys = load_system(doc.dump(), "y.json");
    EXPECT_NEAR(estimate(m, s, sys).iteration_time_s * 1e3, ms, 1e-9) << us;
  }
}

// The interleaved pipeline replay hit an internal assertion (schedule/pipeline.cpp:231) on this
// ordinary plan: llama3-8b with 16 layers, tp2 pp4, interleaving 2, mbc 5. The schedule engine
// runs it (asynchronous p2p, Megatron's default).
TEST(PlanBoundsTest, InterleavedPipelineWithOddMicroBatchCount) {
  ModelConfig m = test::preset_model("llama3-8b");
  m.layer_num = 16;
  StrategyConfig s = strategy(4, 2, 5);
  s.pp_comm_async = true;
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  ASSERT_TRUE(validate_plan(m, s, sys, {}).empty());
  const Estimate e = estimate(m, s, sys);
  EXPECT_GT(e.iteration_time_s, 0);
  EXPECT_NO_THROW(require_finite(e, {}));
}

}  // namespace
}  // namespace trainsim
