// Grouped-GEMM models in the system JSON (`accelerator.op.group_matmul.model`, kind
// grouped_grid): read, written back, rejected with the JSON path when malformed, fitted by
// `system build --grouped-grid` with provenance, and answering the expert GEMMs' keys.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compute/cost.h"
#include "inputs/model_merge.h"
#include "model/graph.h"
#include "system/system_config.h"
#include "core/error.h"

namespace trainsim {
namespace {

// 8 experts of h = 1024, I = 512 at 64 and 256 tokens per expert; the pair's FLOPs per token
// per expert 6·8·1024·512 = 25,165,824: at 256 tokens 6.44 GFLOP in 20 µs, 322 TFLOP/s, 0.322
// of the 1000 TFLOP/s peak.
constexpr const char* kSystem = R"({"sys_name": "tiny_grouped", "num_per_node": 8,
 "accelerator": {"backend": "cuda", "mem_gbs": 80, "op": {
   "default": {"tflops": 1000, "efficient_factor": 0.5},
   "group_matmul": {"tflops": 1000, "efficient_factor": 0.5, "model": {"kind": "grouped_grid",
     "provenance": {"note": "synthetic"},
     "series": [{"experts": 8, "hidden": 1024, "inter": 512, "tokens": [64, 256], "time_us": [10, 20]}]}}},
  "bandwidth": {"default": {"gbps": 1000, "efficient_factor": 1, "latency_us": 0}}},
 "networks": {}})";

constexpr double kUnit = 6.0 * 8 * 1024 * 512;

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

std::string error_of(const std::string& text) {
  try {
    (void)load_system(text, "sys.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

PackedKey key(double ng, double m, double n, double k, KeyStage stage) {
  return grouped_key(ng, m, n, k, KeyDtype::bf16, KeyDtype::bf16, KeyDtype::fp32, stage, false, false, false, true);
}

TEST(SystemGroupedModelTest, ReadsWritesAndAnswersTheExpertGemms) {
  const SystemConfig sys = load_system(kSystem, "tiny.json");
  const ComputeOpConfig& op = sys.ops.at("group_matmul");
  ASSERT_TRUE(op.grouped_model);
  EXPECT_EQ(op.grouped_model->points(), 2u);
  // The up projection (n = 2I, k = h) at a measured count, every stage alike: 0.322 of peak.
  ClassTable classes(sys);
  for (const KeyStage st : {KeyStage::fwd, KeyStage::bwd_grad_act, KeyStage::bwd_grad_w}) {
    Kernel k;
    k.op = OpClass::GroupMatmul;
    k.flops = 2.0 * 8 * 256 * 1024 * 1024;
    k.key = key(8, 256, 1024, 1024, st);
    const KernelCost c = kernel_cost(classes, k, nullptr);
    EXPECT_EQ(c.source, EfficiencySource::Measured);
    EXPECT_NEAR(c.efficiency, kUnit * 256 / 20e-6 / 1e15, 1e-12);
  }
  // The down projection (n = h, k = I) between the counts: interpolated.
  EXPECT_EQ(efficiency_source_of(op, key(8, 128, 1024, 512, KeyStage::fwd)), EfficiencySource::Interpolated);
  EXPECT_EQ(efficiency_source_of(op, key(8, 1024, 1024, 512, KeyStage::fwd)), EfficiencySource::Extrapolated);

  const std::string text = system_to_json_text(sys);
  EXPECT_NE(text.find(R"("model": {"kind": "grouped_grid", "provenance": {"note":"synthetic"}, "series": [)"
                      "\n"
                      R"({"experts": 8, "hidden": 1024, "inter": 512, "tokens": [64, 256], "time_us": [10, 20]})"
                      "\n]}"),
            std::string::npos)
      << text;
  const SystemConfig back = load_system(text, "back.json");
  EXPECT_EQ(system_to_json_text(back), text);
  EXPECT_EQ(back.fingerprint, sys.fingerprint);
  EXPECT_NE(load_system(replaced(kSystem, "[10, 20]", "[10, 21]"), "t").fingerprint, sys.fingerprint);
}

TEST(SystemGroupedModelTest, MalformedModelsNameTheirPath) {
  EXPECT_NE(error_of(replaced(kSystem, "[10, 20]", "[10]"))
                .find("/accelerator/op/group_matmul/model/series: grouped series experts=8"),
            std::string::npos);
  EXPECT_NE(error_of(replaced(kSystem, "[10, 20]", "[10, -1]"))
                .find("/accelerator/op/group_matmul/model/series/0/time_us/1: expected a number > 0, got -1"),
            std::string::npos);
  EXPECT_NE(error_of(replaced(kSystem, R"("group_matmul": {)", R"("matmul": {)"))
                .find("/accelerator/op/matmul/model: a grouped_grid model answers grouped GEMM shape keys: only the "
                      "op classes group_matmul and fp8_group_matmul carry one, not 'matmul'"),
            std::string::npos);
  EXPECT_NE(error_of(replaced(kSystem, R"("inter": 512)", R"("intermediate": 512)"))
                .find("/accelerator/op/group_matmul/model/series/0/inter: required"),
            std::string::npos);
}

TEST(SystemGroupedModelTest, GroupedGridSetsTheModelWithProvenance) {
  SystemConfig sys = load_system(kSystem, "tiny.json");
  sys.ops["group_matmul"].grouped_model.reset();
  const uint64_t before = sys.fingerprint;
  merge_grouped_grid(sys,
                     R"({"kind": "trainsim-grouped-grid", "op": "group_matmul", "device": "GPU X", "dtype": "bfloat16",
                         "provenance": {"package": "tables", "version": "1.0"},
                         "series": [{"experts": 8, "hidden": 1024, "inter": 512, "tokens": [64, 256],
                                     "time_s": [1e-5, 2e-5]},
                                    {"experts": 16, "hidden": 1024, "inter": 512, "tokens": [64], "time_s": [2e-5]}]})",
                     "grid.json");
  const auto& model = sys.ops.at("group_matmul").grouped_model;
  ASSERT_TRUE(model);
  EXPECT_EQ(model->points(), 3u);
  EXPECT_NE(sys.fingerprint, before);
  EXPECT_EQ(model_summaries(sys), std::vector<std::string>{"group_matmul: grouped GEMM model of 3 measured points in "
                                                           "2 expert shapes (tables 1.0, GPU X)"});
  EXPECT_EQ(model->provenance_json,
            R"({"device":"GPU X","dtype":"bfloat16","file":"grid.json",)"
            R"("fitted_by":"trainsim system build --grouped-grid",)"
            R"("points":3,"series":2,"source":{"package":"tables","version":"1.0"}})");
  try {
    merge_grouped_grid(sys, R"({"kind": "trainsim-grouped-grid", "op": "matmul", "device": "X",
                               "series": [{"experts": 8, "hidden": 1, "inter": 1, "tokens": [1], "time_s": [0]}]})",
                       "bad.json");
    FAIL() << "expected an error";
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("/op: expected group_matmul or fp8_group_matmul (grouped GEMM op classes), got 'matmul'"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("/series/0/time_s: expected a non-empty array of numbers > 0, got [0]"), std::string::npos)
        << msg;
  }
}

TEST(SystemGroupedModelTest, GroupedGridSetsAsideASeriesSlowerThanASmallerShape) {
  SystemConfig sys = load_system(kSystem, "tiny.json");
  // At 256 tokens per expert: h 1024 I 512, 6·256·8·1024·512 = 6.44 GFLOP in 20 µs; h 2048 I 1024
  // (4x the FLOPs, 25.8 GFLOP) in 160 µs: half the throughput, over the 1.5x the screen allows.
  merge_grouped_grid(sys,
                     R"({"kind": "trainsim-grouped-grid", "op": "group_matmul", "device": "GPU X",
                         "series": [{"experts": 8, "hidden": 1024, "inter": 512, "tokens": [256], "time_s": [2e-5]},
                                    {"experts": 8, "hidden": 2048, "inter": 1024, "tokens": [256],
                                     "time_s": [1.6e-4]}]})",
                     "grid.json");
  const auto& model = sys.ops.at("group_matmul").grouped_model;
  ASSERT_TRUE(model);
  EXPECT_EQ(model->series().size(), 1u);
  EXPECT_EQ(model->series()[0].hidden, 1024);
  EXPECT_EQ(model->provenance_json,
            R"J({"device":"GPU X","file":"grid.json","fitted_by":"trainsim system build --grouped-grid","points":1,)J"
            R"J("screen":"a series whose throughput at its largest token count >= 256 per expert is below that of a )J"
            R"J(smaller expert shape of the same expert count by more than 1.5x (compute/grouped_screen.h)",)J"
            R"J("series":1,"series_set_aside":[{"experts":8.0,"hidden":2048.0,"inter":1024.0,)J"
            R"J("slower_than":{"hidden":1024.0,"inter":512.0},"throughput_ratio":2.0,"tokens":256.0}]})J");
}

}  // namespace
}  // namespace trainsim
