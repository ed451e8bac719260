// Config readers and plan validation: every class of error names the file, the JSON path, the
// rule and the valid values; all issues of a file are reported together.
#include <gtest/gtest.h>

#include <random>

#include "test_estimate.h"
#include "system/presets.h"
#include "plan/validate.h"
#include "core/error.h"
#include "estimate/estimate.h"
#include "test_errors.h"

namespace trainsim {
namespace {

using test::error_of;

const char* kStrategy = R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 4})";

TEST(ConfigErrorTest, InvalidJsonNamesFileAndOffset) {
  EXPECT_EQ(error_of([] { (void)load_strategy("{\"seq_len\": 40", "s.json"); }).substr(0, 36),
            "s.json: invalid JSON at byte 15: [js");
}

TEST(ConfigErrorTest, UnknownKeySuggestsClosest) {
  EXPECT_EQ(error_of([] {
              (void)load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 4, "tp_sise": 2})", "s.json");
            }),
            "s.json: /tp_sise: unknown key; did you mean 'tp_size'?");
}

TEST(ConfigErrorTest, WrongTypeAndRangeReportedTogether) {
  EXPECT_EQ(error_of([] {
              (void)load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 4,
                                      "pp_size": "2", "zero_state": 7, "mem_factor": 2})", "s.json");
            }),
            "s.json: /pp_size: expected an integer, got a string (\"2\")\n"
            "s.json: /zero_state: must be 0, 1, 2 or 3, got 7\n"
            "s.json: /mem_factor: must be in (0, 1]");
}

TEST(ConfigErrorTest, MissingRequiredFields) {
  EXPECT_EQ(error_of([] { (void)load_model(R"({"hidden_size": 4096})", "m.json"); }),
            "m.json: /head_num: required integer is missing\n"
            "m.json: /kv_head_num: required integer is missing\n"
            "m.json: /layer_num: required integer is missing\n"
            "m.json: /vocab_size: required integer is missing\n"
            "m.json: /head_size: required for attention_type 'mha'\n"
            "m.json: /intermediate_size: required for dense layers");
}

TEST(ConfigErrorTest, EnumValueListsValidValuesAndSuggestion) {
  EXPECT_EQ(error_of([] {
              (void)load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 4,
                                      "recompute_granularity": "full_blok"})", "s.json");
            }),
            "s.json: /recompute_granularity: unknown value 'full_blok'; valid values: full_block, "
            "attn_only, mlp_only, sdp_only, selective_recompute, full, selective; did you mean 'full_block'?");
}

TEST(ConfigErrorTest, SystemMissingDefaultOp) {
  EXPECT_EQ(error_of([] {
              (void)load_system(R"({"sys_name": "x", "accelerator": {"op": {}, "bandwidth": {}}, "networks": {}})", "y.json");
            }),
            "y.json: /accelerator/op/default: required op class is missing\n"
            "y.json: /accelerator/bandwidth/default: required bandwidth class is missing");
}

class PlanTest : public ::testing::Test {
 protected:
  ModelConfig model() const {
    ConfigText t = resolve_config("model", "llama3-8b");
    return load_model(t.text, t.source);
  }
  SystemConfig system() const {
    ConfigText t = resolve_config("system", "h100-sxm-80g");
    return load_system(t.text, t.source);
  }
};

TEST_F(PlanTest, AllViolationsAtOnceWithValidValues) {
  StrategyConfig s = load_strategy(kStrategy, "s.json");
  s.tp_size = 3;
  s.cp_size = 3;
  s.world_size = 8;
  const auto issues = validate_plan(model(), s, system(), {"llama3-8b", "s.json", "h100"});
  ASSERT_EQ(issues.size(), 4u);
  EXPECT_EQ(issues[0].str(), "s.json: /world_size: 8 is not divisible by tp_size·cp_size·pp_size = 9; "
                             "valid world sizes are multiples of 9");
  EXPECT_EQ(issues[1].str(), "s.json: /cp_size: 3 does not divide seq_len (4096)");
  EXPECT_EQ(issues[2].str(), "s.json: /tp_size: 3 does not divide head_num (32) of model llama3-8b; "
                             "valid values: 1, 2, 4, 8, 16, 32");
  EXPECT_EQ(issues[3].str(), "s.json: /cp_size: all-to-all context parallelism splits heads: 3 must "
                             "divide the per-TP-rank head_num (10) and kv_head_num (2); cp_comm_type p2p "
                             "works with any head count");
}

TEST_F(PlanTest, PipelineSplitAndInterleavingRules) {
  StrategyConfig s = load_strategy(kStrategy, "s.json");
  s.pp_size = 5;
  s.world_size = 5;
  auto issues = validate_plan(model(), s, system(), {"m", "s.json", "y"});
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].str(), "s.json: /pp_size: 32 layers do not divide evenly over pp_size 5");
  s.num_layers_in_last_pipeline_stage = 4;  // 28 layers over the 4 other stages: 7 each
  EXPECT_TRUE(validate_plan(model(), s, system(), {"m", "s.json", "y"}).empty());
  StrategyConfig v = load_strategy(kStrategy, "s.json");
  v.pp_size = 2;
  v.interleaving_size = 2;
  // Megatron runs it (asynchronous p2p by default); SimuMax 1.2 does not.
  EXPECT_TRUE(validate_plan(model(), v, system(), {"m", "s.json", "y"}).empty());
  issues = validate_plan(model(), v, system(), {"m", "s.json", "y"}, Mode::SimuMax12);
  ASSERT_EQ(issues.size(), 2u);
  EXPECT_EQ(issues[0].str(), "s.json: /interleaving_size: SimuMax 1.2 models the interleaved pipeline for pp_size ≥ 3 "
                             "only; the default mode models pp_size 2");
  EXPECT_EQ(issues[1].str(), "s.json: /pp_comm_async: SimuMax 1.2 models the synchronous interleaved schedule only; "
                             "set pp_comm_async to false, or use the default mode");
  v.microbatch_group_size_per_vp_stage = 5;  // more than micro_batch_num (4)
  issues = validate_plan(model(), v, system(), {"m", "s.json", "y"});
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].str(), "s.json: /microbatch_group_size_per_vp_stage: Megatron's interleaved schedule needs "
                             "pp_size (2) ≤ microbatch_group_size_per_vp_stage (5) ≤ micro_batch_num (4)");
  v.microbatch_group_size_per_vp_stage.reset();
  v.interleaving_size = 32;  // 16 layers per stage
  issues = validate_plan(model(), v, system(), {"m", "s.json", "y"});
  ASSERT_EQ(issues.size(), 1u);  // the first stage that does not divide
  EXPECT_EQ(issues[0].str(), "s.json: /interleaving_size: the first pipeline stage's 16 layers do not divide into "
                             "32 virtual chunks");
}

TEST_F(PlanTest, EstimateThrowsForIllegalPlan) {
  StrategyConfig s = load_strategy(kStrategy, "s.json");
  s.tp_size = 16;
  s.world_size = 16;
  EXPECT_THROW((void)estimate(model(), s, system()), ConfigError);
}

// Inputs that once overflowed, divided by zero or looped: each is now a ConfigError.
TEST(ConfigErrorTest, HugeSizesAreRejectedAtLoad) {
  EXPECT_EQ(error_of([] {
              (void)load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 4,
                                      "tp_size": 4294967296, "cp_size": 4294967296})", "s.json");
            }),
            "s.json: /tp_size: 4294967296 is larger than the supported maximum 65536\n"
            "s.json: /cp_size: 4294967296 is larger than the supported maximum 65536");
  EXPECT_EQ(error_of([] {
              (void)load_model(R"({"hidden_size": 4096, "head_num": 1000000000000000, "kv_head_num": 8,
                                   "head_size": 128, "intermediate_size": 100, "layer_num": 2,
                                   "vocab_size": 1000})", "m.json");
            }),
            "m.json: /head_num: larger than the supported maximum 65536");
  EXPECT_EQ(error_of([] { (void)load_strategy(R"({"seq_len": 1e400})", "s.json"); }).substr(0, 30),
            "s.json: invalid JSON: [json.ex");
}

TEST(ConfigErrorTest, SystemValuesThatWouldDivideByZero) {
  const std::string net = R"("networks": {"intra_with_pcie": false})";
  EXPECT_EQ(error_of([&] {
              (void)load_system(R"({"sys_name": "x", "accelerator": {"mem_gbs": -5, "op": {"default":
                  {"tflops": 100, "efficient_factor": 0.5, "accurate_efficient_factor": {"k": -1}}},
                  "bandwidth": {"default": {"gbps": 0, "efficient_factor": 0, "latency_us": 1}}}, )" + net + "}",
                                "y.json");
            }),
            "y.json: /accelerator/mem_gbs: must be ≥ 0\n"
            "y.json: /accelerator/op/default/accurate_efficient_factor/k: must be > 0\n"
            "y.json: /accelerator/bandwidth/default/gbps: must be > 0\n"
            "y.json: /accelerator/bandwidth/default/efficient_factor: must be > 0");
}

TEST_F(PlanTest, SequenceParallelNeedsSequenceDivisibleByCpTp) {
  StrategyConfig s = load_strategy(R"({"seq_len": 4097, "micro_batch_size": 1, "micro_batch_num": 4,
      "tp_size": 2})", "s.json");
  const auto issues = validate_plan(model(), s, system(), {"m", "s.json", "y"});
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].str(), "s.json: /seq_len: sequence parallelism splits the sequence over "
                             "cp_size·tp_size = 2, which does not divide 4097");
}

TEST(PresetTest, UnknownPresetSuggests) {
  const std::string msg = error_of([] { (void)resolve_config("model", "llama3-8"); });
  EXPECT_EQ(msg.substr(0, msg.find("; presets:")),
            "llama3-8: no such file, and no model preset of that name; did you mean 'llama3-8b'?");
  EXPECT_NE(msg.find("; presets: deepseek-v2, deepseek-v2-lite,"), std::string::npos);
}

// Random corruptions of a valid strategy never crash: they load, or throw ConfigError; a loaded
// strategy either fails validation or estimates.
TEST_F(PlanTest, CorruptedInputsNeverCrash) {
  const std::string base = R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 4, "tp_size": 2, "pp_size": 2, "world_size": 8})";
  const ModelConfig m = model();
  const SystemConfig sys = system();
  std::mt19937 rng(7);
  const std::string alphabet = "{}[]\":,0123456789-.e tpruxnl";
  int loaded = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string text = base;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < edits; ++k) text[rng() % text.size()] = alphabet[rng() % alphabet.size()];
    try {
      StrategyConfig s = load_strategy(text, "fuzz.json");
      ++loaded;
      if (validate_plan(m, s, sys, {}).empty()) {
        const Estimate e = estimate(m, s, sys);
        EXPECT_GT(e.iteration_time_s, 0);
      }
    } catch (const ConfigError&) {
    }
  }
  EXPECT_GT(loaded, 0);
}

}  // namespace
}  // namespace trainsim
