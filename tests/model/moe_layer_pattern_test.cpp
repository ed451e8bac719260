// Megatron --moe-layer-freq patterns: which layers hold experts, per stage, in the parameter
// count and the step.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_estimate.h"
#include "system/presets.h"
#include "plan/validate.h"
#include "estimate/estimate.h"
#include "model/parameter_count.h"
#include "plan/plan.h"
#include "test_errors.h"
#include "test_presets.h"

namespace trainsim {
namespace {

ModelConfig mixtral_with(const nlohmann::json& freq) {
  nlohmann::json j = nlohmann::json::parse(resolve_config("model", "mixtral-8x7b").text);
  j["moe_layer_freq"] = freq;
  return load_model(j.dump(), "m.json");
}

TEST(MoeLayerPattern, IntAndListForms) {
  // Every 2nd layer (i % 2 == 0) of 32: 16 MoE layers, 16 dense.
  const ModelConfig every2 = mixtral_with(2);
  EXPECT_EQ(every2.moe_layer_pattern.size(), 32u);
  EXPECT_TRUE(every2.is_moe_layer(0));
  EXPECT_FALSE(every2.is_moe_layer(1));
  EXPECT_EQ(every2.moe_layers_in(0, 32), 16);
  nlohmann::json list = nlohmann::json::array();
  for (int i = 0; i < 32; ++i) list.push_back(i % 4 == 3 ? 1 : 0);
  EXPECT_EQ(mixtral_with(list).moe_layers_in(0, 32), 8);
  // Written back as the list, read again the same.
  EXPECT_EQ(load_model(model_to_json_text(every2), "w.json"), every2);
  EXPECT_EQ(test::error_of([] { (void)mixtral_with(nlohmann::json({1, 0})); }),
            "m.json: /moe_layer_freq: the list has 2 entries but layer_num is 32");
  EXPECT_EQ(test::error_of([] { (void)mixtral_with(0); }), "m.json: /moe_layer_freq: an int must be in 1..32");
}

TEST(MoeLayerPattern, StagesParametersAndStep) {
  const ModelConfig every2 = mixtral_with(2), all = test::preset_model("mixtral-8x7b");
  const SystemConfig sys = test::preset_system("b200-sxm-180g");
  StrategyConfig s;
  s.seq_len = 4096;
  s.micro_batch_size = 1;
  s.micro_batch_num = 8;
  s.world_size = 8;
  s.pp_size = 2;
  s.ep_size = 4;
  const Plan p = resolve_plan(every2, s, sys, Mode::Default);
  EXPECT_EQ(p.chunks[0][0].dense_layers, 8);  // layers 1, 3, ..., 15
  EXPECT_EQ(p.chunks[1][0].dense_layers, 8);
  // 16 layers trade 8 experts of 3·4096·14336 (+ router 4096·8) for one dense MLP of the same size.
  const double moe = 8.0 * 3 * 4096 * 14336 + 4096 * 8, dense = 3.0 * 4096 * 14336;
  EXPECT_DOUBLE_EQ(static_cast<double>(count_parameters(all, s).total - count_parameters(every2, s).total),
                   16 * (moe - dense));
  EXPECT_LT(estimate(every2, s, sys).iteration_time_s, estimate(all, s, sys).iteration_time_s);
  const auto compat = validate_plan(every2, s, sys, {"m.json", "s.json", "b200"}, Mode::SimuMax12);
  ASSERT_EQ(compat.size(), 1u);
  EXPECT_EQ(compat[0].str(), "m.json: /moe_layer_freq: a layer pattern other than leading dense layers is not part of "
                             "SimuMax v1.2; use dense_layers or the default mode");
}

}  // namespace
}  // namespace trainsim
