// kernels_bench --memory-probe's host side: the result file and the writer into a system file,
// on a synthetic probe (no GPU).
#include "inputs/strategy_config.h"
#include "memory_probe.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "system/presets.h"
#include "system/system_config.h"
#include "core/error.h"
#include "core/units.h"
#include "memory/non_tensor.h"
#include "test_presets.h"

namespace trainsim::kb {
namespace {

MemoryProbe synthetic() {
  MemoryProbe p;
  p.device = "NVIDIA H100 80GB HBM3";
  p.context_bytes = 612 * kMiB;
  p.cublas_workspace_bytes = 8.5 * kMiB;
  p.cublaslt_workspace_bytes = 33.25 * kMiB;
  p.nccl_ranks = 8;
  p.nccl_communicator_bytes = 416 * kMiB;
  return p;
}

TEST(MemoryProbe, ResultFileRoundTrips) {
  const std::string text = memory_probe_json(synthetic());
  const nlohmann::json j = nlohmann::json::parse(text);
  EXPECT_EQ(j["schema"], "trainsim.memory_probe");
  EXPECT_DOUBLE_EQ(j["context_mib"].get<double>(), 612);
  const MemoryProbe back = parse_memory_probe(text, "probe.json");
  EXPECT_EQ(back.device, "NVIDIA H100 80GB HBM3");
  EXPECT_DOUBLE_EQ(back.context_bytes, 612 * kMiB);
  EXPECT_DOUBLE_EQ(back.cublaslt_workspace_bytes, 33.25 * kMiB);
  EXPECT_EQ(back.nccl_ranks, 8);
  EXPECT_DOUBLE_EQ(back.nccl_communicator_bytes, 416 * kMiB);
}

TEST(MemoryProbe, BadResultFilesNameThePath) {
  try {
    (void)parse_memory_probe(R"({"schema": "other"})", "probe.json");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("probe.json"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("/schema"), std::string::npos);
  }
  nlohmann::json j = nlohmann::json::parse(memory_probe_json(synthetic()));
  j["context_mib"] = -1;
  try {
    (void)parse_memory_probe(j.dump(), "probe.json");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/context_mib"), std::string::npos);
  }
  EXPECT_THROW((void)parse_memory_probe("{", "probe.json"), ConfigError);
}

// The measured values land in the accelerator keys and replace the defaults in the estimate:
// tp 8 on one node holds the context (612 MiB) and one communicator of 32 channels × 416/32 MiB.
TEST(MemoryProbe, WritesTheSystemKeys) {
  nlohmann::json base = nlohmann::json::parse(resolve_config("system", "h100-sxm-80g").text);
  base["accelerator"]["unusable_mem_gbs"] = 3;  // a measured total the terms replace
  const std::string text = apply_memory_probe(base.dump(), "h100.json", synthetic());
  const nlohmann::json j = nlohmann::json::parse(text);
  EXPECT_DOUBLE_EQ(j["accelerator"]["cuda_context_gbs"].get<double>(), 612.0 / 1024);
  EXPECT_DOUBLE_EQ(j["accelerator"]["cublas_workspace_mib"].get<double>(), 33.25);
  EXPECT_DOUBLE_EQ(j["accelerator"]["nccl_channel_buffer_mib"].get<double>(), 13);
  EXPECT_FALSE(j["accelerator"].contains("unusable_mem_gbs"));
  EXPECT_EQ(j["accelerator"]["mem_gbs"], base["accelerator"]["mem_gbs"]);  // other keys kept
  const SystemConfig sys = load_system(text, "measured.json");
  EXPECT_DOUBLE_EQ(sys.cuda_context_bytes, 612 * kMiB);
  EXPECT_DOUBLE_EQ(sys.cublas_workspace_bytes, 33.25 * kMiB);
  const StrategyConfig s = load_strategy(
      R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 4, "world_size": 8, "tp_size": 8})", "s.json");
  const NonTensorMemory n = non_tensor_memory(test::preset_model("llama3-8b"), s, sys);
  EXPECT_DOUBLE_EQ(n.total(), (612.0 + 416.0) * kMiB);
  EXPECT_DOUBLE_EQ(n.workspace_bytes, 2 * 33.25 * kMiB);
  // Without a communicator measured, the NCCL keys stay.
  MemoryProbe no_nccl = synthetic();
  no_nccl.nccl_ranks = 0;
  const nlohmann::json k = nlohmann::json::parse(apply_memory_probe(base.dump(), "h100.json", no_nccl));
  EXPECT_FALSE(k["accelerator"].contains("nccl_channel_buffer_mib"));
  EXPECT_THROW((void)apply_memory_probe(R"({"name": "x"})", "x.json", synthetic()), ConfigError);
}

}  // namespace
}  // namespace trainsim::kb
