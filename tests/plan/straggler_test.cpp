// The straggler factor: its value from cluster size and the system file, and its basis in the
// summary and the JSON report.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_estimate.h"
#include "estimate/estimate.h"
#include "plan/plan.h"
#include "views/report.h"
#include "test_errors.h"
#include "test_presets.h"

namespace trainsim {
namespace {

TEST(Straggler, RatioAndBasisFromClusterSizeAndSystem) {
  SystemConfig sys = test::preset_system("h100-sxm-80g");
  StrategyConfig s = load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 8,
                                       "world_size": 32, "tp_size": 2})", "s");
  // 32 GPUs on 8-GPU nodes: 4 nodes → n = 4, log2 n = 2: 1 + 2/3 · 0.055 · √2 = 1.0518545.
  Straggler st = straggler_model(s, sys);
  EXPECT_EQ(st.nodes, 4);
  EXPECT_EQ(st.replicas, 4);
  EXPECT_NEAR(st.ratio, 1.0518545, 1e-7);
  EXPECT_EQ(st.basis(), "1 + j·log2 n/(log2 n + 1)·sqrt(log2 n) with n = 4 nodes (every node joins the step's "
                        "synchronising collectives), j = 0.055 (default, fitted over nodes on the validation runs)");
  // The same GPUs without data parallelism (tp 8, pp 4: dp 1) wait on the same 4 nodes.
  StrategyConfig no_dp = s;
  no_dp.tp_size = 8;
  no_dp.pp_size = 4;
  EXPECT_EQ(straggler_model(no_dp, sys).ratio, st.ratio);
  // SimuMax v1.2 counts min(nodes, dp, edp) replicas: dp 1 → 1.
  EXPECT_EQ(straggler_model(no_dp, sys, Mode::SimuMax12).ratio, 1);
  EXPECT_EQ(straggler_model(no_dp, sys, Mode::SimuMax12).basis(),
            "1: one replica (min of nodes, dp, edp) has no slower peer to wait for");
  EXPECT_EQ(straggler_model(s, sys, Mode::SimuMax12).basis(),
            "1 + j·log2 n/(log2 n + 1)·sqrt(log2 n) with n = 4 replicas (min of 4 nodes, dp 16, edp 32), "
            "j = 0.09 (default, SimuMax v1.2's constant)");
  // A calmer cluster: j = 0.03 → 1 + 2/3 · 0.03 · √2 = 1.0282843.
  sys.straggler_jitter = 0.03;
  st = straggler_model(s, sys);
  EXPECT_NEAR(st.ratio, 1.0282843, 1e-7);
  EXPECT_NE(st.basis().find("j = 0.03 (system straggler_jitter)"), std::string::npos);
  s.world_size = 8;  // one node
  EXPECT_EQ(straggler_model(s, sys).ratio, 1);
  EXPECT_EQ(straggler_model(s, sys).basis(), "1: one node has no slower peer to wait for");
  s.world_size = 32;
  s.enable_straggler_model = false;
  EXPECT_EQ(straggler_model(s, sys).ratio, 1);
  EXPECT_EQ(straggler_model(s, sys).basis(), "off (strategy enable_straggler_model false)");
}

TEST(Straggler, ShownInSummaryAndJson) {
  StrategyInputs in;
  in.model = test::preset_model("llama3-8b");
  in.system = test::preset_system("h100-sxm-80g");
  in.strategy = load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 8,
                                  "world_size": 32, "tp_size": 2})", "s");
  in.take_plan(resolve_plan(in.model, in.strategy, in.system, Mode::Default));
  const Estimate e = estimate(in.model, in.strategy, in.system);
  const nlohmann::json j = nlohmann::json::parse(estimate_to_json(in, e));
  EXPECT_NEAR(j["straggler"]["ratio"].get<double>(), 1.0518545, 1e-7);  // 4 nodes, j = 0.055
  EXPECT_EQ(j["straggler"]["replicas"], 4);
  EXPECT_EQ(j["straggler"]["basis"], e.straggler.basis());
  EXPECT_NE(estimate_summary(in, e).find("straggler      x1.052: 1 + j·log2 n"), std::string::npos);
}

TEST(Straggler, SystemKeyIsCheckedRoundTripsAndIsDefaultModeOnly) {
  nlohmann::json doc = nlohmann::json::parse(resolve_config("system", "h100-sxm-80g").text);
  doc["straggler_jitter"] = 1.5;
  EXPECT_EQ(test::error_of([&] { (void)load_system(doc.dump(), "y.json"); }),
            "y.json: /straggler_jitter: must be in [0, 1] (relative step-time jitter of one node), got 1.5");
  doc["straggler_jitter"] = 0.03;
  const SystemConfig sys = load_system(doc.dump(), "y.json");
  EXPECT_EQ(load_system(system_to_json_text(sys), "z").straggler_jitter, std::optional<double>(0.03));
  const ModelConfig m = test::preset_model("llama3-8b");
  const StrategyConfig s = load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 8})", "s");
  EXPECT_EQ(test::error_of([&] { (void)estimate(m, s, sys, nullptr, Mode::SimuMax12); }),
            "system: /straggler_jitter: is not part of SimuMax v1.2; use the default mode");
}

}  // namespace
}  // namespace trainsim
