// Optimizer CPU offload (optimizer_cpu_offload, optimizer_offload_fraction), hand-computed on
// Llama 3 8B (8,030,261,248 parameters) with tp 1, pp 1, dp 8 and the distributed optimizer
// (zero_state 1, the default).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_estimate.h"
#include "plan/validate.h"
#include "core/units.h"
#include "estimate/estimate.h"
#include "test_errors.h"
#include "test_presets.h"

namespace trainsim {
namespace {

constexpr double kParams = 8030261248.0;

SystemConfig h100_host(double link_gbps, double adam_gbps) {
  nlohmann::json j = nlohmann::json::parse(resolve_config("system", "h100-sxm-80g").text);
  j["host"] = {{"link_gbps", link_gbps}, {"cpu_adam_gbps", adam_gbps}};
  return load_system(j.dump(), "sys.json");
}

StrategyConfig strategy(const std::string& extra) {
  return load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 1, "world_size": 8)" +
                           (extra.empty() ? "" : ", " + extra) + "}",
                       "s.json");
}

Estimate run(const std::string& extra, const SystemConfig& sys) {
  return estimate(test::preset_model("llama3-8b"), strategy(extra), sys);
}

// Optimizer states: 12 B per parameter sharded over dp 8 = 12,045,391,872 B. Half offloaded:
// 6,022,695,936 B stay; the host holds the other half and the fp32 gradients of those parameters
// (16 B per offloaded parameter): 6,022,695,936 × 16/12 = 8,030,261,248 B.
TEST(OptimizerOffload, HalfTheStatesMoveToTheHost) {
  const SystemConfig sys = h100_host(50, 10);
  const Estimate ref = run("", sys);
  const Estimate off = run(R"("optimizer_cpu_offload": true, "optimizer_offload_fraction": 0.5)", sys);
  EXPECT_DOUBLE_EQ(ref.stages[0].state_bytes, kParams * 12 / 8);
  EXPECT_DOUBLE_EQ(off.stages[0].state_bytes, kParams * 12 / 8 / 2);
  EXPECT_DOUBLE_EQ(off.stages[0].host_bytes, kParams);
  EXPECT_DOUBLE_EQ(ref.stages[0].host_bytes, 0);
  EXPECT_DOUBLE_EQ(ref.stages[0].peak_alloc_bytes - off.stages[0].peak_alloc_bytes, kParams * 12 / 8 / 2);
}

// Step time: the CPU Adam updates 12 B per offloaded parameter at cpu_adam_gbps; all 1,003,782,656
// parameters of the shard at 10 GiB/s take 12,045,391,872 / 10,737,418,240 = 1.1218145 s, at
// 20 GiB/s half that. The link moves 4 B of gradient down and 2 B of parameter up: 6,022,695,936 B
// at 50 GiB/s = 0.11218145 s, at 100 GiB/s half that. The GPU share is affine in the states it
// updates, so the step at f = 0.5 is the mean of f = 0.25 and f = 0.75.
TEST(OptimizerOffload, StepGainsTheCpuAdamAndTheCopies) {
  const std::string all = R"("optimizer_cpu_offload": true)";
  const double base = run(all, h100_host(50, 10)).stage_times[0].optimizer_s;
  EXPECT_NEAR(base - run(all, h100_host(50, 20)).stage_times[0].optimizer_s, 1.1218145370483399 / 2, 1e-9);
  EXPECT_NEAR(base - run(all, h100_host(100, 10)).stage_times[0].optimizer_s, 0.11218145370483398 / 2, 1e-9);
  const SystemConfig sys = h100_host(50, 10);
  auto at = [&](const char* f) {
    return run(all + R"(, "optimizer_offload_fraction": )" + f, sys).stage_times[0].optimizer_s;
  };
  EXPECT_NEAR(at("0.5"), (at("0.25") + at("0.75")) / 2, 1e-9);
  EXPECT_GT(base, run("", sys).stage_times[0].optimizer_s + 1.2);
}

TEST(OptimizerOffload, SystemHostSectionRoundTrips) {
  const std::string text = system_to_json_text(h100_host(50, 12.5));
  const SystemConfig back = load_system(text, "back.json");
  EXPECT_DOUBLE_EQ(back.host_link_bytes_per_s, 50 * kGiB);
  EXPECT_DOUBLE_EQ(back.host_adam_bytes_per_s, 12.5 * kGiB);
  // A system without one writes none.
  SystemConfig bare = test::preset_system("h100-sxm-80g");
  EXPECT_TRUE(nlohmann::json::parse(system_to_json_text(bare)).contains("host"));
  bare.host_link_bytes_per_s = bare.host_adam_bytes_per_s = 0;
  EXPECT_TRUE(nlohmann::json::parse(system_to_json_text(bare)).contains("host"));  // its framework
  bare.host_framework.reset();
  EXPECT_FALSE(nlohmann::json::parse(system_to_json_text(bare)).contains("host"));
  EXPECT_EQ(test::error_of([] {
              nlohmann::json j = nlohmann::json::parse(resolve_config("system", "h100-sxm-80g").text);
              j["host"] = {{"link_gbps", -1}};
              (void)load_system(j.dump(), "sys.json");
            }),
            "sys.json: /host/link_gbps: must be ≥ 0");
}

TEST(OptimizerOffload, SettingsThatCannotWorkAreErrors) {
  const ModelConfig m = test::preset_model("llama3-8b");
  auto issues = [&](const std::string& extra, const SystemConfig& sys, Mode mode) {
    std::string out;
    for (const auto& i : validate_plan(m, strategy(extra), sys, PlanSources{}, mode))
      out += i.source + " " + i.path + ": " + i.message + "\n";
    return out;
  };
  // A system without its host section (every preset has one).
  SystemConfig bare = test::preset_system("h100-sxm-80g");
  bare.host_link_bytes_per_s = 0;
  bare.host_adam_bytes_per_s = 0;
  EXPECT_EQ(issues(R"("optimizer_offload_fraction": 0.5)", bare, Mode::Default),
            "strategy /optimizer_offload_fraction: changes nothing without optimizer_cpu_offload; set "
            "optimizer_cpu_offload to true\n");
  EXPECT_EQ(issues(R"("optimizer_cpu_offload": true)", bare, Mode::Default),
            "system /host/link_gbps: optimizer_cpu_offload needs the host link's bandwidth per GPU and direction in "
            "GiB/s (PCIe Gen5 x16 moves about 50)\n"
            "system /host/cpu_adam_gbps: optimizer_cpu_offload needs the optimizer state the CPU Adam updates per "
            "second for one GPU, in GiB/s\n");
  EXPECT_EQ(issues(R"("optimizer_cpu_offload": true, "zero_state": 0)", h100_host(50, 10), Mode::Default),
            "strategy /optimizer_cpu_offload: needs the distributed optimizer (Megatron); set zero_state to 1 or "
            "more\n");
  EXPECT_EQ(issues(R"("optimizer_cpu_offload": true)", h100_host(50, 10), Mode::SimuMax12),
            "strategy /optimizer_cpu_offload: is not part of SimuMax v1.2; remove it or use the default mode\n");
  EXPECT_EQ(test::error_of([] { (void)strategy(R"("optimizer_offload_fraction": 0)"); }),
            "s.json: /optimizer_offload_fraction: must be in (0, 1]");
}

}  // namespace
}  // namespace trainsim
