// Efficiency models in the system JSON (`accelerator.op.<op>.model`): read, written back one
// grid line per m, rejected with the JSON path when malformed; `system build --gemm-grid` fits
// one from measured points with provenance.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "inputs/input_file.h"
#include "compute/cost.h"
#include "inputs/model_merge.h"
#include "system/system_config.h"
#include "core/error.h"
#include "system/presets.h"
#include "test_errors.h"

#include <nlohmann/json.hpp>

namespace trainsim {
namespace {

std::string tiny() { return read_file(std::string(TRAINSIM_TEST_DATA) + "/system_model/tiny_gemm_model.json"); }

std::string error_of(const std::string& text) {
  try {
    (void)load_system(text, "sys.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(SystemModelTest, ReadsAndWritesTheGemmGrid) {
  const SystemConfig sys = load_system(tiny(), "tiny.json");
  const auto& model = sys.ops.at("matmul").gemm_model;
  ASSERT_TRUE(model);
  EXPECT_EQ(model->points(), 2u);
  EXPECT_EQ(model->m_axis().size(), 3u);
  EXPECT_EQ(model->time_at(1, 0, 0), 0);  // null: not measured
  // The hole at m = 64 from m = 32 and 128: 2·sqrt(2) µs (compute/gemm_model_test.cpp).
  const GemmAnswer a = model->predict(64, 64, 64);
  EXPECT_EQ(a.source, EfficiencySource::Interpolated);
  EXPECT_NEAR(a.time_s, 2 * std::sqrt(2.0) * 1e-6, 1e-15);
  EXPECT_EQ(model->provenance_json, R"({"note":"synthetic: 1/32 µs per row at m = 32, 1/16 at m = 128"})");

  const std::string text = system_to_json_text(sys);
  EXPECT_NE(text.find(R"("model": {"kind": "gemm_grid", "provenance": {"note":"synthetic: 1/32 µs per row at m = 32, )"
                      R"(1/16 at m = 128"}, "m": [32, 64, 128], "n": [64], "k": [64], "time_us": [)"
                      "\n1,\nnull,\n8\n]}"),
            std::string::npos)
      << text;
  const SystemConfig back = load_system(text, "back.json");
  EXPECT_EQ(system_to_json_text(back), text);
  EXPECT_EQ(back.fingerprint, sys.fingerprint);
  // The fingerprint follows the grid's values (hashed, not formatted).
  EXPECT_NE(load_system(replaced(tiny(), "[1, null, 8]", "[1, null, 8.5]"), "t").fingerprint, sys.fingerprint);
  EXPECT_EQ(load_system(tiny(), "other name").fingerprint, sys.fingerprint);
  EXPECT_EQ(model_summaries(sys), std::vector<std::string>{"matmul: GEMM model of 2 measured points"});
  // Without a model, no `model` member.
  SystemConfig plain = sys;
  plain.ops["matmul"].gemm_model.reset();
  EXPECT_EQ(system_to_json_text(plain).find("\"model\""), std::string::npos);
}

TEST(SystemModelTest, MalformedModelsNameTheirPath) {
  EXPECT_NE(error_of(replaced(tiny(), R"("kind": "gemm_grid")", R"("kind": "spline")"))
                .find("/accelerator/op/matmul/model/kind: unknown model kind 'spline'; valid values: gemm_grid"),
            std::string::npos);
  EXPECT_NE(error_of(replaced(tiny(), R"("time_us": [1, null, 8])", R"("time_us": [1, 8])"))
                .find("/accelerator/op/matmul/model: GEMM grid: 2 times for 3 × 1 × 1 nodes"),
            std::string::npos);
  EXPECT_NE(error_of(replaced(tiny(), R"("time_us": [1, null, 8])", R"("time_us": [1, -2, 8])"))
                .find("/accelerator/op/matmul/model/time_us/1: expected a number > 0 or null (not measured), got -2"),
            std::string::npos);
  EXPECT_NE(error_of(replaced(tiny(), R"("m": [32, 64, 128])", R"("m": [32, 128, 64])"))
                .find("/accelerator/op/matmul/model: GEMM grid axis values must be strictly increasing"),
            std::string::npos);
  EXPECT_NE(error_of(replaced(tiny(), R"("matmul": {)", R"("sdp_fwd": {)"))
                .find("/accelerator/op/sdp_fwd/model: a gemm_grid model answers dense GEMM shape keys: only the op "
                      "classes matmul and fp8_matmul carry one, not 'sdp_fwd'"),
            std::string::npos);
  EXPECT_NE(error_of(replaced(tiny(), R"("time_us")", R"("times")")).find("/accelerator/op/matmul/model/time_us: required"),
            std::string::npos);
}

// A node's time beyond the plausible range (gemm_model.h) gave infinite held-out errors.
TEST(SystemModelTest, AGridNodesTimeBeyondThePlausibleRangeIsAnError) {
  EXPECT_EQ(error_of(replaced(tiny(), R"("time_us": [1, null, 8])", R"("time_us": [1, null, 1e300])")),
            "sys.json: /accelerator/op/matmul/model: GEMM grid: time 1e+294 s at m=128 n=64 k=64: expected 1e-09 to "
            "1000 s");
}

// A grid of holes only was read as a model of no points (every shape then fell back to the class
// default without a word).
TEST(SystemModelTest, AGridWithoutAMeasuredNodeIsAnError) {
  EXPECT_EQ(error_of(replaced(tiny(), R"("time_us": [1, null, 8])", R"("time_us": [null, null, null])")),
            "sys.json: /accelerator/op/matmul/model/time_us: no measured node: every time is null; expected at least "
            "one time in µs");
}

// --gemm-grid: a second time for a node was kept over the first without a word.
TEST(SystemModelTest, GemmGridWithASecondTimeForANodeIsAnError) {
  SystemConfig sys = load_system(tiny(), "tiny.json");
  EXPECT_EQ(test::error_of([&] {
              merge_gemm_grid(sys, R"({"kind": "trainsim-gemm-grid", "op": "matmul", "device": "X",
                                       "points": [[32, 64, 64, 1e-6], [128, 64, 64, 8e-6], [32, 64, 64, 3e-6]]})",
                              "grid.json");
            }),
            "grid.json: /points: GEMM point m=32 n=64 k=64 time_s=3e-06: a second time for the same node (first "
            "1e-06 s)");
}

TEST(SystemModelTest, GemmGridWavesAreReadWrittenAndChecked) {
  // The waves of compute/gemm_model.h: read from the model, written back, part of the
  // fingerprint; the grid document's are copied into the fitted model.
  const std::string with = replaced(tiny(), R"("kind": "gemm_grid",)",
                                    R"("kind": "gemm_grid", "waves": {"sm_count": 108, "tile_m": 128, "tile_n": 256},)");
  const SystemConfig sys = load_system(with, "waves.json");
  const auto& model = sys.ops.at("matmul").gemm_model;
  ASSERT_TRUE(model);
  EXPECT_EQ(model->waves().sms, 108);
  EXPECT_EQ(model->waves().tile_n, 256);
  EXPECT_NE(sys.fingerprint, load_system(tiny(), "tiny.json").fingerprint);
  const std::string text = system_to_json_text(sys);
  EXPECT_NE(text.find(R"("waves": {"sm_count": 108, "tile_m": 128, "tile_n": 256}, "m": [32, 64, 128])"), std::string::npos)
      << text;
  EXPECT_EQ(system_to_json_text(load_system(text, "back.json")), text);
  EXPECT_NE(error_of(replaced(with, R"("tile_m": 128)", R"("tile_m": 0)"))
                .find("/accelerator/op/matmul/model: GEMM waves: sm_count 108, tile_m 0, tile_n 256: each must be "
                      "finite and > 0"),
            std::string::npos);
  EXPECT_NE(error_of(replaced(with, R"("tile_n": 256)", R"("tile": 256)")).find("/accelerator/op/matmul/model/waves/tile_n"),
            std::string::npos);
  SystemConfig merged = load_system(tiny(), "tiny.json");
  merge_gemm_grid(merged,
                  R"({"kind": "trainsim-gemm-grid", "op": "matmul", "device": "GPU X", "waves": {"sm_count": 4,
                      "tile_m": 64, "tile_n": 64}, "points": [[32, 64, 64, 1e-6], [128, 64, 64, 8e-6]]})",
                  "grid.json");
  EXPECT_EQ(merged.ops.at("matmul").gemm_model->waves().sms, 4);
}

TEST(SystemModelTest, GemmGridFitsTheModelWithProvenance) {
  SystemConfig sys = load_system(tiny(), "tiny.json");
  sys.ops["matmul"].accurate.set("b=1, m=4096, k=4096, n=4096, layout=TN, accumulate=False, out_dtype=bf16", 0.7);
  const uint64_t before = sys.fingerprint;
  merge_gemm_grid(sys,
                  R"({"kind": "trainsim-gemm-grid", "op": "matmul", "device": "GPU X", "dtype": "bfloat16",
                      "provenance": {"package": "tables", "version": "1.0"},
                      "points": [[32, 64, 64, 1e-6], [128, 64, 64, 8e-6], [128, 128, 64, 16e-6]]})",
                  "grid.json");
  const auto& model = sys.ops.at("matmul").gemm_model;
  ASSERT_TRUE(model);
  EXPECT_EQ(model->points(), 3u);
  EXPECT_TRUE(sys.ops.at("matmul").accurate.empty());
  EXPECT_EQ(model_summaries(sys), std::vector<std::string>{"matmul: GEMM model of 3 measured points (tables 1.0, GPU X)"});
  EXPECT_NE(sys.fingerprint, before);
  EXPECT_EQ(model->provenance_json,
            R"({"device":"GPU X","dtype":"bfloat16","file":"grid.json","fitted_by":"trainsim system build --gemm-grid",)"
            R"("grid":"2 m × 2 n × 1 k","points":3,"replaced_entries":1,"source":{"package":"tables","version":"1.0"}})");
  try {
    merge_gemm_grid(sys, R"({"kind": "trainsim-gemm-grid", "op": "fp8_matmul", "device": "X", "points": [[1, 2, 3]]})",
                    "bad.json");
    FAIL() << "expected an error";
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("/op: the base system has no op class 'fp8_matmul'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("/points/0: expected [m, n, k, time_s], four numbers > 0, got [1,2,3]"), std::string::npos) << msg;
  }
  // Points on unrelated m, n and k: an input error naming the file, not an allocation of
  // points³ nodes.
  std::string scattered = R"({"kind": "trainsim-gemm-grid", "op": "matmul", "device": "X", "points": [)";
  for (int i = 1; i <= 41; ++i) scattered += (i > 1 ? ", [" : "[") + std::to_string(32 * i) + ", " +
                                             std::to_string(32 * i) + ", " + std::to_string(32 * i) + ", 1e-6]";
  try {
    merge_gemm_grid(sys, scattered + "]}", "scattered.json");
    FAIL() << "expected an error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("scattered.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("/points: 41 points span a grid of 41 m × 41 n × 41 k nodes"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace trainsim

namespace trainsim {
namespace {

// A SimuMax-style file: measured per-shape entries at a 2000 TFLOP/s peak.
constexpr const char* kMeasured = R"({"sys_name": "measured_x", "description": "calibrated by someone", "num_per_node": 8,
 "accelerator": {"backend": "cuda", "mem_gbs": 80, "op": {
   "default": {"tflops": 2000, "efficient_factor": 0.5},
   "matmul": {"tflops": 2000, "efficient_factor": 0.5, "accurate_efficient_factor": {
     "b=1, m=1024, k=4096, n=4096, layout=TN, accumulate=False, out_dtype=bf16": 0.2,
     "b=1, m=4096, k=4096, n=4096, layout=TN, accumulate=False, out_dtype=bf16": 0.3}},
   "sdp_fwd": {"tflops": 2000, "efficient_factor": 0.5, "accurate_efficient_factor": {
     "batch=1, seq_len=4096, head_num=32, kv_head_num=8, qk_head_dim=128, v_head_dim=128, qkv_contiguous=True": 0.6}}},
  "bandwidth": {"default": {"gbps": 1000, "efficient_factor": 1, "latency_us": 0}}},
 "networks": {}})";

// `system build --measured-system`: the entries become points models of the same classes, the
// efficiency carried over as the same time against the base's peak (2000 / 1000 TFLOP/s: × 2).
TEST(SystemModelTest, MeasuredEntriesOfAnotherFileBecomePointsModels) {
  SystemConfig sys = load_system(tiny(), "tiny.json");
  const SystemConfig src = load_system(kMeasured, "measured.json");
  try {
    (void)merge_measured_system(sys, src, "measured.json", {"sdp_fwd"});
    FAIL() << "expected an error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/accelerator/op/sdp_fwd: the base system has no op class 'sdp_fwd'"),
              std::string::npos)
        << e.what();
  }
  const uint64_t before = sys.fingerprint;
  EXPECT_EQ(merge_measured_system(sys, src, "dir/measured.json", {"matmul"}), std::vector<std::string>{"matmul"});
  const ComputeOpConfig& mm = sys.ops.at("matmul");
  ASSERT_TRUE(mm.point_model);
  EXPECT_FALSE(mm.gemm_model);  // replaced
  EXPECT_NE(sys.fingerprint, before);
  const PackedKey mid = matmul_key(1, 2048, 4096, 4096, KeyLayout::TN, false, KeyDtype::bf16);
  EXPECT_NEAR(mm.point_model->predict(mid).efficiency, 2 * std::sqrt(0.2 * 0.3), 1e-12);
  EXPECT_EQ(model_summaries(sys),
            std::vector<std::string>{"matmul: GEMM model of 2 measured shapes (measured_x, measured.json)"});
  EXPECT_EQ(mm.point_model->provenance_json,
            R"({"description":"calibrated by someone","family":"GEMM","file":"dir/measured.json",)"
            R"("fitted_by":"trainsim system build --measured-system","points":2,)"
            R"("replaced_model":"gemm_grid of 2 points","source_tflops":2000.0,"sys_name":"measured_x"})");
  // Written and read back: the same points and provenance.
  const std::string text = system_to_json_text(sys);
  const SystemConfig back = load_system(text, "back.json");
  ASSERT_TRUE(back.ops.at("matmul").point_model);
  EXPECT_EQ(back.ops.at("matmul").point_model->points(), 2u);
  EXPECT_NEAR(back.ops.at("matmul").point_model->predict(mid).efficiency, 2 * std::sqrt(0.2 * 0.3), 1e-12);
  EXPECT_EQ(system_to_json_text(back), text);
  EXPECT_EQ(back.fingerprint, sys.fingerprint);
  // A class the file did not measure is an error naming it.
  try {
    (void)merge_measured_system(sys, src, "measured.json", {"group_matmul"});
    FAIL() << "expected an error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/accelerator/op/group_matmul/accurate_efficient_factor: no measured entries "
                                         "of op class 'group_matmul'"),
              std::string::npos)
        << e.what();
  }
}

// `system build --take-from --take`: op classes and networks taken whole (models and curves
// included), the rest of the base untouched; a name the source lacks is an error listing its own.
TEST(SystemModelTest, TakesClassesAndNetworksWholeFromAnotherFile) {
  const ConfigText base = resolve_config("system", "h100-sxm-80g");
  const ConfigText measured = resolve_config("system", "h100-sxm-80g-measured");
  SystemConfig sys = load_system(base.text, base.source);
  const SystemConfig src = load_system(measured.text, measured.source);
  const double sdp_eff = sys.ops.at("sdp_fwd").efficient_factor;
  const uint64_t before = sys.fingerprint;
  EXPECT_EQ(take_from_system(sys, src, "m.json", {"matmul", "high_intra_node"}),
            (std::vector<std::string>{"matmul", "high_intra_node"}));
  EXPECT_NE(sys.fingerprint, before);
  ASSERT_TRUE(sys.ops.at("matmul").gemm_model);
  EXPECT_EQ(sys.ops.at("matmul").gemm_model->points(), src.ops.at("matmul").gemm_model->points());
  EXPECT_FALSE(sys.ops.at("fp8_matmul").gemm_model);  // not taken
  EXPECT_EQ(sys.ops.at("sdp_fwd").efficient_factor, sdp_eff);
  EXPECT_FALSE(sys.ops.at("sdp_fwd").point_model);
  EXPECT_EQ(nlohmann::json::parse(sys.provenance_json)["taken"],
            nlohmann::json::parse(R"({"file": "m.json", "sys_name": "h100_sxm_80g_measured",
                                      "names": ["matmul", "high_intra_node"]})"));
  // Written and read back: the taken model and curves survive.
  const SystemConfig back = load_system(system_to_json_text(sys), "back.json");
  EXPECT_TRUE(back.ops.at("matmul").gemm_model);
  EXPECT_EQ(system_to_json_text(back), system_to_json_text(sys));
  try {
    (void)take_from_system(sys, src, "m.json", {"inter_nod"});
    FAIL() << "expected an error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("m.json: /accelerator/op/inter_nod: no op class 'inter_nod' to take; it has: "
                                         "default, fp8_group_matmul, fp8_matmul, group_matmul, matmul, sdp_bwd, "
                                         "sdp_fwd, high_intra_node, inter_node, low_intra_node"),
              std::string::npos)
        << e.what();
  }
  // merge_measured_system on a class that carries a model, not entries, points to --take.
  try {
    (void)merge_measured_system(sys, src, "m.json", {"fp8_matmul"});
    FAIL() << "expected an error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no measured entries of op class 'fp8_matmul' to fit a model on; it carries "
                                         "a fitted model, which --take-from (this file) --take fp8_matmul takes whole"),
              std::string::npos)
        << e.what();
  }
}

// `system build --measured-bandwidths`: a memory-bound class keeps the base's peak and takes the
// measured effective bandwidth and latency. By hand: SimuMax's A100-PCIe figures, 1600 GiB/s at
// 0.91 = 1456 GiB/s and 40 µs, onto a base of 2000 GiB/s at 0.8 and 10 µs: efficiency 1456 / 2000
// = 0.728; one launch streaming 1 GiB takes 1 / 1456 s + 40 µs = 686.813 + 40 = 726.813 µs.
TEST(SystemModelTest, MeasuredBandwidthClassesKeepTheEffectiveBandwidth) {
  SystemConfig sys = load_system(replaced(tiny(), R"("default": {"gbps": 1000, "efficient_factor": 1, "latency_us": 0})",
                                          R"("default": {"gbps": 2000, "efficient_factor": 0.8, "latency_us": 10})"),
                                 "tiny.json");
  const SystemConfig src =
      load_system(replaced(kMeasured, R"("default": {"gbps": 1000, "efficient_factor": 1, "latency_us": 0})",
                           R"("default": {"gbps": 1600, "efficient_factor": 0.91, "latency_us": 40})"),
                  "measured.json");
  const uint64_t before = sys.fingerprint;
  EXPECT_EQ(merge_measured_bandwidths(sys, src, "dir/measured.json", {"default"}), std::vector<std::string>{"default"});
  const BandwidthConfig& bw = sys.bandwidths.at("default");
  EXPECT_NEAR(bw.bytes_per_s, 2000.0 * (1 << 30), 1e-3);
  EXPECT_NEAR(bw.efficient_factor, 0.728, 1e-12);
  EXPECT_NEAR(bw.latency_s, 40e-6, 1e-15);
  EXPECT_NE(sys.fingerprint, before);
  ClassTable classes(sys);
  EXPECT_NEAR(memory_time(classes, 1024.0 * 1024 * 1024, "default") * 1e6, 726.813, 1e-3);
  const std::string prov = sys.provenance_json;
  // Inside a CUDA graph the base's 10 µs per kernel stays: 686.813 + 10 = 696.813 µs.
  ASSERT_TRUE(bw.graph_latency_s.has_value());
  EXPECT_NEAR(*bw.graph_latency_s, 10e-6, 1e-15);
  Kernel k;
  k.bytes = 1024.0 * 1024 * 1024;
  EXPECT_NEAR(kernel_cost(classes, k, nullptr, true).time_s * 1e6, 696.813, 1e-3);
  EXPECT_NE(prov.find(R"("default":{"efficient_factor":0.728,"graph_latency_source":"the base's floor per kernel; )"
                      R"(assumed, to be measured","graph_latency_us":10.0,"latency_us":40.0,)"
                      R"("replaced_efficient_factor":0.8,)"
                      R"("replaced_latency_us":10.0,"source_efficient_factor":0.91,"source_gbps":1600.0})"),
            std::string::npos)
      << prov;
  EXPECT_NE(prov.find(R"("file":"dir/measured.json")"), std::string::npos) << prov;
  // Written and read back: the same class.
  const SystemConfig back = load_system(system_to_json_text(sys), "back.json");
  EXPECT_NEAR(back.bandwidths.at("default").efficient_factor, 0.728, 1e-12);
  EXPECT_NEAR(back.bandwidths.at("default").latency_s, 40e-6, 1e-15);
  EXPECT_NEAR(back.bandwidths.at("default").launch_floor_s(true), 10e-6, 1e-15);
  // A source with a graph floor of its own gives that one.
  const SystemConfig src_graph = load_system(
      replaced(kMeasured, R"("default": {"gbps": 1000, "efficient_factor": 1, "latency_us": 0})",
               R"("default": {"gbps": 1600, "efficient_factor": 0.91, "latency_us": 40, "graph_latency_us": 3})"),
      "measured.json");
  SystemConfig own = back;
  (void)merge_measured_bandwidths(own, src_graph, "dir/measured.json", {"default"});
  EXPECT_NEAR(own.bandwidths.at("default").launch_floor_s(true), 3e-6, 1e-15);
  // A class the source lacks, and a measured bandwidth above the base's peak, are errors naming them.
  try {
    (void)merge_measured_bandwidths(sys, src, "measured.json", {"permute_fwd"});
    FAIL() << "expected an error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/accelerator/bandwidth/permute_fwd: no bandwidth class 'permute_fwd' to take"),
              std::string::npos)
        << e.what();
  }
  SystemConfig slow = load_system(tiny(), "tiny.json");  // 1000 GiB/s < 1456
  try {
    (void)merge_measured_bandwidths(slow, src, "measured.json", {"default"});
    FAIL() << "expected an error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("effective bandwidth 1456.00 GiB/s exceeds the base's peak 1000.00 GiB/s"),
              std::string::npos)
        << e.what();
  }
}

// --measured-system of a file without measured entries merged nothing and reported success
// ("measured-points models of  from ...").
TEST(SystemModelTest, AMeasuredSystemWithoutMeasuredEntriesIsAnError) {
  SystemConfig sys = load_system(tiny(), "tiny.json");
  const SystemConfig src = load_system(tiny(), "plain.json");
  EXPECT_EQ(test::error_of([&] { (void)merge_measured_system(sys, src, "plain.json", {}); }),
            "plain.json: /accelerator/op: no op class has measured entries (accurate_efficient_factor) to fit a model "
            "on; give a system file measured per shape (e.g. a SimuMax system file), --take-from FILE --take CLASSES "
            "for classes that carry fitted models, or leave --measured-system out");
}

TEST(SystemModelTest, MalformedPointsModelsNameTheirPath) {
  const std::string model =
      R"("model": {"kind": "points", "points": {"b=1, m=1024, k=64, n=64, layout=TN, accumulate=False, out_dtype=bf16": 0.5}})";
  const std::string ok = replaced(tiny(), R"("model": {"kind": "gemm_grid", "provenance": {"note": "synthetic: 1/32 µs per row at m = 32, 1/16 at m = 128"},
                        "m": [32, 64, 128], "n": [64], "k": [64], "time_us": [1, null, 8]})",
                                  model);
  const SystemConfig sys = load_system(ok, "ok.json");
  ASSERT_TRUE(sys.ops.at("matmul").point_model);
  EXPECT_NE(error_of(replaced(ok, "0.5}}", "-1}}")).find("efficiency must be a number > 0"), std::string::npos);
  EXPECT_NE(error_of(replaced(ok, "b=1, m=1024", "b=1 m=1024"))
                .find("not a GEMM shape key of op class 'matmul' (the format of accurate_efficient_factor)"),
            std::string::npos);
  EXPECT_NE(error_of(replaced(ok, R"("efficient_factor": 0.5})", R"("efficient_factor": 0.5, )" + model + "}"))
                .find("/accelerator/op/default/model: a points model answers shape keys: only the op classes "
                      "matmul, fp8_matmul, group_matmul, fp8_group_matmul, sdp_fwd and sdp_bwd carry one, not "
                      "'default'"),
            std::string::npos);
}

}  // namespace
}  // namespace trainsim
