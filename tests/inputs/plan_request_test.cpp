// Combining presets, files and overrides into one plan.
#include "inputs/plan_request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>

#include "core/error.h"
#include "test_errors.h"

namespace trainsim {
namespace {

template <typename F>
std::string error_of(F f) {
  return test::error_of<Error>(f);
}

TEST(PlanRequest, OverridesAndShortcuts) {
  PlanRequest r;
  r.overrides = {{"tp_size", "4", "--tp 4"}, {"dp_size", "4", "--dp 4"}, {"global_batch_size", "64", "--gbs 64"},
                 parse_set_option("zero_state=2"), parse_set_option("dtype=fp16")};
  const PlanConfigs p = build_plan(r, "llama3-8b", "tp2-pp2-dp2-zero1");
  EXPECT_EQ(p.strategy.tp_size, 4);
  EXPECT_EQ(p.strategy.world_size, 32);       // dp 4 · tp 4 · pp 2
  EXPECT_EQ(p.strategy.micro_batch_num, 16);  // 64 / (mbs 1 · dp 4)
  EXPECT_EQ(p.strategy.zero_state, 2);
  EXPECT_EQ(p.strategy.dtype, "fp16");
  EXPECT_EQ(p.strategy_source, "preset:strategy/tp2-pp2-dp2-zero1 with --tp 4, --dp 4, --gbs 64, --set zero_state=2, --set dtype=fp16");
  EXPECT_EQ(error_of([] { (void)parse_set_option("tp=2"); }),
            "--set: unknown key 'tp' (model or strategy keys, dp_size, global_batch_size, or a system key path such as "
            "accelerator.mem_gbs); did you mean 'tp_size'?");
  EXPECT_EQ(error_of([] { (void)parse_set_option("tp_size"); }), "--set: expected key=value, got 'tp_size'");
  r.overrides = {parse_set_option("tp_size=two")};
  EXPECT_EQ(error_of([&] { (void)build_plan(r, "llama3-8b", "tp2-pp2-dp2-zero1"); }),
            "preset:strategy/tp2-pp2-dp2-zero1 with --set tp_size=two: /tp_size: expected an integer, got a string (\"two\")");
  r.overrides = {{"global_batch_size", "9", "--gbs 9"}};
  EXPECT_EQ(error_of([&] { (void)build_plan(r, "llama3-8b", "tp2-pp2-dp2-zero1"); }),
            "--gbs 9: global batch 9 is not a multiple of micro_batch_size·dp = 1·2");
}

// --set routes keys by these lists; every listed key must be one the readers know (null = absent).
TEST(PlanRequest, KeyListsMatchTheReaders) {
  nlohmann::json model = {{"hidden_size", 64}, {"head_num", 4}, {"kv_head_num", 4}, {"head_size", 16},
                          {"intermediate_size", 128}, {"layer_num", 2}, {"vocab_size", 100}};
  for (const auto& k : model_keys()) {
    nlohmann::json doc = model;
    if (!doc.contains(k)) doc[k] = nullptr;
    EXPECT_EQ(error_of([&] { (void)load_model(doc.dump(), "m"); }), test::kNoError) << k;
  }
  for (const auto& k : strategy_keys()) {
    nlohmann::json doc = {{"seq_len", 8}, {"micro_batch_size", 1}, {"micro_batch_num", 1}};
    if (!doc.contains(k)) doc[k] = nullptr;
    EXPECT_EQ(error_of([&] { (void)load_strategy(doc.dump(), "s"); }), test::kNoError) << k;
  }
  const auto keys = strategy_keys();
  for (const char* k : {"tp_size", "recompute_granularity", "num_layers_in_first_pipeline_stage", "mem_factor"})
    EXPECT_NE(std::find(keys.begin(), keys.end(), k), keys.end()) << k;
}

TEST(PlanRequest, InputsThatExcludeEachOther) {
  PlanRequest r;
  r.model = ConfigText{"{}", "m.json"};
  r.hf_config = ConfigText{"{}", "config.json"};
  EXPECT_EQ(error_of([&] { (void)build_plan(r, "", ""); }), "--model and --hf-config exclude each other");
  PlanRequest none;
  EXPECT_EQ(error_of([&] { (void)build_plan(none, "", "tp2-pp2-dp2-zero1"); }),
            "a model is needed: --model, --hf-config, or model flags in --megatron-args");
}

}  // namespace
}  // namespace trainsim
