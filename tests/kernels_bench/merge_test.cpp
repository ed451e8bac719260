// merge_kernels: hand-computed efficiencies, and a round trip through the system JSON reader.
#include <gtest/gtest.h>

#include <functional>

#include <nlohmann/json.hpp>

#include "calibration/kernels_file.h"
#include "calibration/kernels_merge.h"
#include "system/presets.h"
#include "system/system_config.h"
#include "core/error.h"
#include "core/units.h"

namespace trainsim {
namespace {

const char* kTn = "b=1, m=4096, k=4096, n=6144, layout=TN, accumulate=False, out_dtype=bf16";
const char* kNn = "b=1, m=4096, k=6144, n=4096, layout=NN, accumulate=False, out_dtype=bf16";
const char* kSdpa =
    "batch=1, seq_len=4096, head_num=32, kv_head_num=8, qk_head_dim=128, v_head_dim=128, qkv_contiguous=True";

std::string data(const std::string& name) { return std::string(TRAINSIM_TEST_DATA) + "/kernels/" + name; }

SystemConfig merged() {
  SystemConfig sys = load_system(read_file(data("base_system.json")), "base");
  merge_kernels(sys, read_file(data("kernels_fixture.json")), "kernels_fixture.json");
  return sys;
}

TEST(KernelsMergeTest, ComputeEfficienciesUseTheSystemPeak) {
  SystemConfig sys = merged();
  const auto& mm = sys.ops.at("matmul");
  double tn = 206158430208.0 / (3e-4 * 989e12);  // flops / (median * peak)
  double nn = 206158430208.0 / (4e-4 * 989e12);
  EXPECT_DOUBLE_EQ(mm.accurate.at(kTn), tn);
  EXPECT_DOUBLE_EQ(mm.accurate.at(kNn), nn);
  EXPECT_DOUBLE_EQ(mm.efficient_factor, (tn + nn) / 2);
  // fp8_matmul is not in the base: created with the device's fp8 peak.
  EXPECT_DOUBLE_EQ(sys.ops.at("fp8_matmul").peak_flops, 1979e12);
  EXPECT_DOUBLE_EQ(sys.ops.at("fp8_matmul").accurate.at(kTn), 206158430208.0 / (2e-4 * 1979e12));
  // sdp_fwd keeps the base's 1000 TFLOPS and its unmeasured entry; fallback = measured mean.
  const auto& sdp = sys.ops.at("sdp_fwd");
  EXPECT_DOUBLE_EQ(sdp.accurate.at(kSdpa), 274877906944.0 / (5e-4 * 1000e12));
  EXPECT_EQ(sdp.accurate.size(), 2u);
  EXPECT_DOUBLE_EQ(sdp.efficient_factor, 274877906944.0 / (5e-4 * 1000e12));
  // default = mean over measured non-fp8, non-attention classes = matmul's mean.
  EXPECT_DOUBLE_EQ(sys.ops.at("default").efficient_factor, (tn + nn) / 2);
  EXPECT_EQ(sys.ops.count("group_matmul"), 0u);  // only an unsupported result
  EXPECT_DOUBLE_EQ(sys.mem_bytes, 85520809984.0);
}

TEST(KernelsMergeTest, BandwidthClassesDeductLatencyPerLaunch) {
  SystemConfig sys = merged();
  const auto& def = sys.bandwidths.at("default");
  EXPECT_DOUBLE_EQ(def.bytes_per_s, 3.35e12);
  EXPECT_DOUBLE_EQ(def.efficient_factor, 2147483648.0 / (3.35e12 * (8e-4 - 10e-6)));
  // permute_fwd is new: it starts from default (10 us latency); two cases, two launches each.
  const auto& perm = sys.bandwidths.at("permute_fwd");
  EXPECT_DOUBLE_EQ(perm.efficient_factor,
                   (796917760.0 + 1468006400.0) / (3.35e12 * ((5e-4 - 20e-6) + (9e-4 - 20e-6))));
  EXPECT_DOUBLE_EQ(perm.latency_s, 10e-6);
  // Not measured: untouched.
  EXPECT_DOUBLE_EQ(sys.bandwidths.at("ce").bytes_per_s, 3000 * kGiB);
  EXPECT_DOUBLE_EQ(sys.bandwidths.at("ce").efficient_factor, 0.6);
}

TEST(KernelsMergeTest, ProvenanceRecordsTheMeasurement) {
  auto prov = nlohmann::json::parse(merged().provenance_json);
  EXPECT_EQ(prov["note"], "hand-written");
  const auto& k = prov["kernels"];
  EXPECT_EQ(k["gpu"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(k["cublas_version"], "13.1.0");
  EXPECT_DOUBLE_EQ(k["sm_clock_max_mhz"].get<double>(), 1980);  // fixture: device clocks
  EXPECT_DOUBLE_EQ(k["mem_clock_mhz"].get<double>(), 2619);
  EXPECT_EQ(k["date"], "2026-01-02T03:04:05Z");
  EXPECT_EQ(k["measurement_provenance"]["tool"], "kernels_bench");
  EXPECT_EQ(k["results"]["ok"], 8);
  EXPECT_EQ(k["results"]["unsupported"], 1);
  EXPECT_DOUBLE_EQ(k["launch_latency_us"].get<double>(), 2.5);
}

TEST(KernelsMergeTest, MergedSystemReadsBackWithTheMeasuredKeys) {
  SystemConfig sys = merged();
  SystemConfig back = load_system(system_to_json_text(sys), "merged");
  EXPECT_DOUBLE_EQ(back.ops.at("matmul").accurate.at(kTn), sys.ops.at("matmul").accurate.at(kTn));
  EXPECT_DOUBLE_EQ(back.ops.at("sdp_fwd").accurate.at(kSdpa), sys.ops.at("sdp_fwd").accurate.at(kSdpa));
  EXPECT_NEAR(back.bandwidths.at("permute_fwd").bytes_per_s, 3.35e12, 3.35e12 * 1e-13);
  EXPECT_DOUBLE_EQ(back.bandwidths.at("permute_fwd").efficient_factor,
                   sys.bandwidths.at("permute_fwd").efficient_factor);
  EXPECT_NEAR(back.mem_bytes, 85520809984.0, 1);
}

TEST(KernelsMergeTest, LatencyDominatedCaseIsSkippedWithAWarning) {
  SystemConfig sys = load_system(read_file(data("base_system.json")), "base");
  std::string k = read_file(data("kernels_fixture.json"));
  auto j = nlohmann::json::parse(k);
  j["results"] = nlohmann::json::array(
      {{{"kind", "memory"}, {"op", "ce_fusion"}, {"key", "tokens=8, vocab=8"}, {"status", "ok"}, {"bytes", 1000},
        {"launches", 2}, {"time_s", {{"n", 10}, {"median", 15e-6}}}}});
  merge_kernels(sys, j.dump(), "k.json");
  EXPECT_EQ(sys.bandwidths.count("ce_fusion"), 0u);
  auto prov = nlohmann::json::parse(sys.provenance_json);
  EXPECT_EQ(prov["kernels"]["warnings"][0],
            "ce_fusion 'tokens=8, vocab=8': measured 15 us is not above the class latency x 2 launches; case "
            "skipped");
}

// kernels_bench --launch-floor: 2.5 µs per eager launch, 0.75 µs per kernel in a CUDA graph.
// Every bandwidth class takes both, and the efficiencies deduct the eager floor: default
// 2 GiB in 800 µs, 2147483648 / (3.35e12 · (800 − 2.5) µs).
TEST(KernelsMergeTest, LaunchFloorsSetEveryClassBeforeTheEfficiencies) {
  SystemConfig sys = load_system(read_file(data("base_system.json")), "base");
  auto j = nlohmann::json::parse(read_file(data("kernels_fixture.json")));
  for (auto [op, t] : {std::pair{"eager_launch_floor", 2.5e-6}, {"graph_launch_floor", 0.75e-6}})
    j["results"].push_back({{"kind", "latency"}, {"op", op}, {"key", "fill_4kib_x256"}, {"status", "ok"},
                            {"launches", 1}, {"time_s", {{"n", 20}, {"median", t}}}});
  merge_kernels(sys, j.dump(), "k.json");
  for (const char* name : {"default", "ce", "permute_fwd"}) {
    EXPECT_DOUBLE_EQ(sys.bandwidths.at(name).launch_floor_s(false), 2.5e-6) << name;
    EXPECT_DOUBLE_EQ(sys.bandwidths.at(name).launch_floor_s(true), 0.75e-6) << name;
  }
  EXPECT_DOUBLE_EQ(sys.bandwidths.at("default").efficient_factor, 2147483648.0 / (3.35e12 * (8e-4 - 2.5e-6)));
  const auto prov = nlohmann::json::parse(sys.provenance_json);
  EXPECT_DOUBLE_EQ(prov["kernels"]["latency_us"].get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(prov["kernels"]["graph_latency_us"].get<double>(), 0.75);
  // The written system file carries the graph floor.
  const SystemConfig back = load_system(system_to_json_text(sys), "merged");
  EXPECT_DOUBLE_EQ(back.bandwidths.at("ce").launch_floor_s(true), 0.75e-6);
  // One of the two alone changes no latency (a warning says so).
  SystemConfig one = load_system(read_file(data("base_system.json")), "base");
  j["results"].erase(j["results"].size() - 1);
  merge_kernels(one, j.dump(), "k.json");
  EXPECT_DOUBLE_EQ(one.bandwidths.at("ce").latency_s, 10e-6);
  EXPECT_FALSE(one.bandwidths.at("ce").graph_latency_s.has_value());
  EXPECT_EQ(nlohmann::json::parse(one.provenance_json)["kernels"]["warnings"][0],
            "only one of eager_launch_floor and graph_launch_floor measured; latencies kept");
}

TEST(KernelsMergeTest, MalformedMeasurementsAreConfigErrors) {
  SystemConfig sys = load_system(read_file(data("base_system.json")), "base");
  try {
    merge_kernels(sys, R"({"schema_version": "1.0.0", "kind": "trainsim-comm", "device": {"name": "x"},
                           "results": [{"kind": "compute", "op": "matmul", "key": "b=1", "status": "done"}]})",
                  "k.json");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "k.json: /kind: expected 'trainsim-kernels', got 'trainsim-comm' (is this a kernels_bench output?)\n"
                 "k.json: /results/0/status: expected one of ok, unsupported, failed, got 'done'\n"
                 "k.json: /results/0/key: shape key 'b=1': expected 7 fields (b, m, k, n, layout, accumulate, "
                 "out_dtype), got 1");
  }
}

// Numbers beyond the system file's ranges: a peak or a result's FLOP of 1e300, a launch floor of
// 1e300 s were merged and rejected only when the merged file was read back (an error naming the
// output file, not this one); a negative device memory was ignored without a word.
TEST(KernelsMergeTest, ImplausibleNumbersAreErrorsAtTheirPath) {
  const auto error = [](const std::function<void(nlohmann::json&)>& edit) {
    SystemConfig sys = load_system(read_file(data("base_system.json")), "base");
    auto j = nlohmann::json::parse(read_file(data("kernels_fixture.json")));
    edit(j);
    try {
      merge_kernels(sys, j.dump(), "k.json");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  EXPECT_EQ(error([](nlohmann::json& j) {
              j["device"]["peak_bf16_tflops"] = 1e300;
              j["device"]["peak_fp8_tflops"] = -1;
              j["device"]["peak_mem_bandwidth_bytes_per_s"] = 1e300;
              j["device"]["mem_bytes"] = -85520809984.0;
            }),
            "k.json: /device/peak_bf16_tflops: must be 0 (not measured) or from 1e-06 to 1e+06 TFLOPS (the system "
            "file's range), got 1e+300\n"
            "k.json: /device/peak_fp8_tflops: must be 0 (not measured) or from 1e-06 to 1e+06 TFLOPS (the system "
            "file's range), got -1\n"
            "k.json: /device/peak_mem_bandwidth_bytes_per_s: must be 0 (not measured) or from 1073.74 to 1.07374e+15 "
            "bytes/s (the system file's gbps range, 1e-06 to 1e+06 GiB/s), got 1e+300\n"
            "k.json: /device/mem_bytes: must be 0 (not measured) or a device memory of at most 1.07374e+15 bytes (the "
            "system file's 1e+06 GiB), got -85520809984");
  EXPECT_EQ(error([](nlohmann::json& j) {
              j["results"][0]["flops"] = 1e300;
              j["results"][5]["bytes"] = 1e300;
              j["results"].push_back({{"kind", "latency"}, {"op", "eager_launch_floor"}, {"key", "fill_4kib_x256"},
                                      {"status", "ok"}, {"time_s", {{"n", 20}, {"median", 1e300}}}});
            }),
            "k.json: /results/0/flops: must be at most 1e+21 (1e+06 TFLOPS for 1000 s), got 1e+300\n"
            "k.json: /results/5/bytes: must be at most 1.1259e+15 (2^50, 1 PiB), got 1e+300\n"
            "k.json: /results/9/time_s/median: must be from 1e-09 to 1000 s (1 ns to 1000 s), got 1e+300; check the "
            "units (seconds)");
  // Within the ranges each, but an efficiency the system file rejects (above 100).
  EXPECT_EQ(error([](nlohmann::json& j) { j["results"][1]["flops"] = 1e20; }),
            "k.json: /results/1: efficiency flops / (time_s.median x peak) = 1e+20 / (0.0004 s x 989 TFLOPS) = "
            "2.52781e+08 is outside the system file's 1e-06 to 100: check flops and time_s (seconds), or the op class's "
            "peak (base system, device.peak_*_tflops)");
  EXPECT_EQ(error([](nlohmann::json& j) { j["results"][6]["bytes"] = 1e15; }),
            "k.json: /results/6: bandwidth class 'permute_fwd': efficiency bytes / (peak x time) = 1e+15 / "
            "(3.35e+12 bytes/s x 0.00136 s) = 219491 is outside the system file's 1e-06 to 100: check its results' "
            "bytes and time_s (seconds), or device.peak_mem_bandwidth_bytes_per_s");
  EXPECT_EQ(error([](nlohmann::json& j) { j["device"]["mem_bytes"] = 0; }), "<no error>");
}

TEST(KernelsMergeTest, UnsupportedSchemaVersion) {
  SystemConfig sys = load_system(read_file(data("base_system.json")), "base");
  try {
    merge_kernels(sys, R"({"schema_version": "2.1.0", "kind": "trainsim-kernels", "device": {"name": "x"},
                           "results": []})",
                  "k.json");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "k.json: /schema_version: unsupported schema_version '2.1.0'; this build reads 1.x.y");
  }
}

}  // namespace
}  // namespace trainsim
