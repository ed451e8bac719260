// Memory besides the tensors (default mode): the caching allocator's reserve, the CUDA context
// and NCCL's communicator buffers (memory/non_tensor.h), each against a hand computation.
#include "memory/non_tensor.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <utility>

#include "config/presets.h"
#include "core/error.h"
#include "core/units.h"
#include "estimate/estimate.h"
#include "report/validation.h"
#include "test_presets.h"

namespace trainsim {
namespace {

StrategyConfig strategy(const std::string& extra) {
  return load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 4, "world_size": 8)" +
                           (extra.empty() ? "" : ", " + extra) + "}",
                       "s.json");
}

TEST(NonTensorMemory, NcclBuffersPerChannelAndCommunicator) {
  // SIMPLE 1 << 22 + LL128 120·640·8·8 + LL 8·512·8·16 bytes.
  EXPECT_DOUBLE_EQ(kNcclChannelBufferBytes, 4194304.0 + 4915200.0 + 524288.0);
  EXPECT_DOUBLE_EQ(kNcclChannelBufferBytes / kMiB, kDefaultNcclChannelBufferMiB);
  // 32 channels × 9.1875 MiB = 294 MiB; a group of one rank has no communicator.
  EXPECT_DOUBLE_EQ(nccl_communicator_bytes(8, 32, kNcclChannelBufferBytes) / kMiB, 294);
  EXPECT_DOUBLE_EQ(nccl_communicator_bytes(2, 16, kNcclChannelBufferBytes) / kMiB, 147);
  EXPECT_DOUBLE_EQ(nccl_communicator_bytes(1, 32, kNcclChannelBufferBytes), 0);
}

TEST(NonTensorMemory, AllocatorReserve) {
  // 100 GiB allocated, fragmentation 0.0544: 105.44 GiB reserved.
  EXPECT_NEAR(allocator_reserved_bytes(100 * kGiB, 0.0544) / kGiB, 105.44, 1e-9);
  EXPECT_DOUBLE_EQ(allocator_reserved_bytes(3 * kGiB, 0), 3 * kGiB);
}

// CUDA graphs' pool: Llama 3 8B (hidden 4096, 32 layers) with tp 2 (sequence parallel) and pp 2:
// 4 buffers × 4096/2 tokens × 4096 × 2 B × 16 layers = 1 GiB; none without graphs, and the
// older switch (enable_cuda_graph) counts as the local implementation.
TEST(NonTensorMemory, CudaGraphPool) {
  const ModelConfig m = test::preset_model("llama3-8b");
  const StrategyConfig graphs = strategy(R"("tp_size": 2, "pp_size": 2, "cuda_graph_impl": "local")");
  EXPECT_DOUBLE_EQ(cuda_graph_pool_bytes(m, graphs, 16), kGiB);
  EXPECT_DOUBLE_EQ(cuda_graph_pool_bytes(m, strategy(R"("tp_size": 2, "pp_size": 2)"), 16), 0);
  EXPECT_DOUBLE_EQ(cuda_graph_pool_bytes(m, strategy(R"("enable_cuda_graph": true)"), 1), 4 * 4096.0 * 4096 * 2);
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  const NonTensorMemory n = non_tensor_memory(m, graphs, sys);
  EXPECT_DOUBLE_EQ(n.cuda_graph_bytes, kGiB);
  EXPECT_DOUBLE_EQ(n.total(), n.context_bytes + n.nccl_bytes + kGiB);
}

TEST(NonTensorMemory, ContextAndOneCommunicatorPerGroup) {
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  // Dense, tp 2, pp 2, dp 2: tp, dp·cp and pp groups of 2 ranks: 3 × 294 MiB + 0.5 GiB context.
  NonTensorMemory n = non_tensor_memory(test::preset_model("llama3-8b"), strategy(R"("tp_size": 2, "pp_size": 2)"), sys);
  EXPECT_EQ(n.communicators, 3);
  EXPECT_DOUBLE_EQ(n.nccl_bytes / kMiB, 3 * 294);
  EXPECT_DOUBLE_EQ(n.context_bytes, 0.5 * kGiB);
  EXPECT_NEAR(n.total() / kGiB, 0.5 + 882.0 / 1024, 1e-12);
  EXPECT_FALSE(n.measured);
  // cp 2, dp 4: the cp group and the gradient group over dp·cp = 8.
  n = non_tensor_memory(test::preset_model("llama3-8b"), strategy(R"("cp_size": 2)"), sys);
  EXPECT_EQ(n.communicators, 2);
  // MoE, ep 4, dp 8: dp·cp 8, ep 4 and the expert data-parallel group of 8 / 4 = 2 (etp 1: none).
  n = non_tensor_memory(test::preset_model("mixtral-8x7b"), strategy(R"("ep_size": 4)"), sys);
  EXPECT_EQ(n.communicators, 3);
  // One GPU: the context alone.
  StrategyConfig one = strategy("");
  one.world_size = 1;
  n = non_tensor_memory(test::preset_model("llama3-8b"), one, sys);
  EXPECT_EQ(n.communicators, 0);
  EXPECT_DOUBLE_EQ(n.total(), 0.5 * kGiB);
}

TEST(NonTensorMemory, SystemKeysReplaceTheDefaults) {
  nlohmann::json j = nlohmann::json::parse(resolve_config("system", "h100-sxm-80g").text);
  j["accelerator"]["cuda_context_gbs"] = 0.75;
  j["accelerator"]["nccl_channels"] = 16;
  j["accelerator"]["nccl_channel_buffer_mib"] = 4;
  j["accelerator"]["allocator_fragmentation"] = 0.03;
  const SystemConfig sys = load_system(j.dump(), "sys.json");
  const NonTensorMemory n = non_tensor_memory(test::preset_model("llama3-8b"), strategy(R"("tp_size": 8)"), sys);
  EXPECT_EQ(n.communicators, 1);
  EXPECT_DOUBLE_EQ(n.total() / kGiB, 0.75 + 16 * 4.0 / 1024);  // 0.8125 GiB
  EXPECT_DOUBLE_EQ(sys.allocator_fragmentation, 0.03);
  // Written back, read again.
  const SystemConfig back = load_system(system_to_json_text(sys), "back.json");
  EXPECT_DOUBLE_EQ(back.cuda_context_bytes, 0.75 * kGiB);
  EXPECT_EQ(back.nccl_channels, 16);
  EXPECT_DOUBLE_EQ(back.nccl_channel_buffer_bytes, 4 * kMiB);
  EXPECT_DOUBLE_EQ(back.allocator_fragmentation, 0.03);
  // A measured total outside PyTorch replaces the context and NCCL terms.
  j["accelerator"]["unusable_mem_gbs"] = 2.5;
  const NonTensorMemory m = non_tensor_memory(test::preset_model("llama3-8b"), strategy(R"("tp_size": 8)"),
                                              load_system(j.dump(), "sys.json"));
  EXPECT_TRUE(m.measured);
  EXPECT_DOUBLE_EQ(m.total(), 2.5 * kGiB);
  j["accelerator"]["nccl_channels"] = 0;
  EXPECT_THROW((void)load_system(j.dump(), "sys.json"), Error);
}

// The default fragmentation is the mean reserved / allocated − 1 of the B200 table's memory runs
// (each topology measured once; the mbc 8 and 32 rows repeat the mbc 4 figures).
TEST(NonTensorMemory, FragmentationDefaultIsTheB200TableMean) {
  const ValidationTable t = load_validation_table(std::string(TRAINSIM_SOURCE_DIR) + "/validation/b200_megatron");
  const size_t alloc = 1, reserved = 2;
  ASSERT_EQ(t.metrics[alloc], ValidationMetric::AllocGib);
  ASSERT_EQ(t.metrics[reserved], ValidationMetric::ReservedGib);
  std::map<std::pair<double, double>, int> runs;
  for (const auto& c : t.cases) ++runs[{c.real[alloc], c.real[reserved]}];
  ASSERT_EQ(runs.size(), 10u);
  double sum = 0;
  for (const auto& [ar, n] : runs) sum += ar.second / ar.first - 1;
  EXPECT_NEAR(sum / 10, kDefaultAllocatorFragmentation, 5e-5);  // 0.05438
}

// The estimate: default mode reserves allocated × (1 + f) and carries the stage's non-tensor
// memory; compat mode keeps SimuMax's allocated / mem_factor and no per-stage term.
TEST(NonTensorMemory, EstimateUsesTheTermsInDefaultModeOnly) {
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  const ModelConfig m = test::preset_model("llama3-8b");
  const StrategyConfig s = strategy(R"("tp_size": 2, "pp_size": 2, "enable_sequence_parallel": true)");
  const Estimate d = estimate(m, s, sys);
  for (const auto& st : d.stages) {
    EXPECT_DOUBLE_EQ(st.peak_reserved_bytes, st.peak_alloc_bytes * 1.0544);
    EXPECT_NEAR(st.non_tensor_bytes / kGiB, 0.5 + 882.0 / 1024, 1e-12);
  }
  const Estimate c = estimate(m, s, sys, nullptr, Mode::SimuMax12);
  for (const auto& st : c.stages) {
    EXPECT_DOUBLE_EQ(st.peak_reserved_bytes, st.peak_alloc_bytes / 0.94);
    EXPECT_DOUBLE_EQ(st.non_tensor_bytes, 0);
  }
}

}  // namespace
}  // namespace trainsim
