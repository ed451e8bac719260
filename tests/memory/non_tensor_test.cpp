// Memory besides the tensors (default mode): the caching allocator's reserve, the CUDA context
// and NCCL's communicator buffers (memory/non_tensor.h), each against a hand computation.
#include "test_estimate.h"
#include "memory/non_tensor.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <utility>

#include "system/presets.h"
#include "core/error.h"
#include "core/units.h"
#include "estimate/estimate.h"
#include "cli/validation_runner.h"
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

TEST(NonTensorMemory, NvlsBuffersPerCommunicator) {
  // 16 channels × 2 buffers × 128 KiB × one head per rank in the node.
  EXPECT_DOUBLE_EQ(nvls_communicator_bytes(8, 16, 128 * 1024) / kMiB, 32);
  EXPECT_DOUBLE_EQ(nvls_communicator_bytes(2, 16, 128 * 1024) / kMiB, 8);
  EXPECT_DOUBLE_EQ(nvls_communicator_bytes(1, 16, 128 * 1024), 0);  // no peer in the node
  EXPECT_DOUBLE_EQ(nvls_communicator_bytes(8, 0, 128 * 1024), 0);   // NVLS off
}

TEST(NonTensorMemory, UserbuffersOfTpCommOverlap) {
  // GPT-3 20B at sequence 2048, micro-batch 2: [4096, 6144]; fp8: 6 × 1 B + 4 × 2 B per element.
  EXPECT_DOUBLE_EQ(userbuffers_bytes(4096, 6144, true), 4096.0 * 6144 * 14);
  EXPECT_DOUBLE_EQ(userbuffers_bytes(4096, 6144, true) / kMiB, 336);
  EXPECT_DOUBLE_EQ(userbuffers_bytes(4096, 6144, false) / kMiB, 480);  // 10 × 2 B
}

TEST(NonTensorMemory, DeepepAndHybridepBuffers) {
  // DeepSeek-V3 hidden 7168 over 8 ranks, 20 SMs: 10 channels × 8 peers, hidden bytes 14336.
  // Header 10·8·(2·1 + 3)·4 = 1600 B; slots 10·8·256·(14336 + 8 + 1024 + 512 + 512) =
  // 335,708,160 B; rounded up to 128 B: 335,709,824 B. No RDMA part inside a node.
  EXPECT_DOUBLE_EQ(deepep_buffer_bytes(8, 7168, 20, 256, 128), 335709824.0);
  // 16 ranks: 2 RDMA peers. NVLink: header 10·8·7·4 = 2240 → 335,710,464 B rounded; RDMA:
  // 10·2·18·2·4 = 2880 + 10·2·128·16392·2 = 83,927,040 → 83,929,984 B rounded.
  EXPECT_DOUBLE_EQ(deepep_buffer_bytes(16, 7168, 20, 256, 128), 335710464.0 + 83929984.0);
  EXPECT_DOUBLE_EQ(deepep_buffer_bytes(1, 7168, 20, 256, 128), 0);
  // HybridEP: 8 ranks × 4096 tokens × 7168 × (1 B fp8 dispatch + 2 B combine) = 672 MiB.
  EXPECT_DOUBLE_EQ(hybridep_buffer_bytes(8, 4096, 7168, 1) / kMiB, 672);
  EXPECT_DOUBLE_EQ(hybridep_buffer_bytes(1, 4096, 7168, 1), 0);
}

TEST(NonTensorMemory, LibraryWorkspacesAreAllocatedBytes) {
  EXPECT_DOUBLE_EQ(library_workspace_bytes(2, 32 * kMiB) / kMiB, 64);
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  const ModelConfig m = test::preset_model("llama3-8b");
  const StrategyConfig s = strategy(R"("tp_size": 2, "pp_size": 2)");
  const NonTensorMemory n = non_tensor_memory(m, s, sys);
  EXPECT_DOUBLE_EQ(n.workspace_bytes, 64 * kMiB);
  EXPECT_DOUBLE_EQ(n.total(), 0.5 * kGiB + 3 * 294 * kMiB);  // not outside PyTorch
  // The estimate counts them in the stage's static allocated bytes ("other").
  const Estimate d = estimate(m, s, sys);
  for (const auto& st : d.stages)
    EXPECT_NEAR(st.model_bytes - st.weight_bytes - st.grad_bytes - st.state_bytes, 64 * kMiB, 1.0);
}

// The plan's terms: GPT-3 20B's NeMo layout (tp 2 with sequence parallelism and tp_comm_overlap,
// dp 32, fp8, sequence 2048, micro-batch 2) with NVLS on (16 channels): the tp group has 2 ranks
// in the node (8 MiB), the gradient group over dp 32 at stride 2 has 4 (16 MiB); userbuffers
// 336 MiB; with NVLS off (the presets' default) none.
TEST(NonTensorMemory, NvlsAndUserbuffersOfAPlan) {
  nlohmann::json j = nlohmann::json::parse(resolve_config("system", "h100-sxm-80g").text);
  const ModelConfig m = load_model(R"({"hidden_size": 6144, "head_num": 48, "kv_head_num": 48, "head_size": 128, "layer_num": 44,
      "vocab_size": 50257, "intermediate_size": 24576})", "m.json");
  const StrategyConfig s = load_strategy(R"({"seq_len": 2048, "micro_batch_size": 2, "micro_batch_num": 4,
      "world_size": 64, "tp_size": 2, "enable_sequence_parallel": true, "tp_comm_overlap": true, "fp8": true,
      "dtype": "bf16"})", "s.json");
  NonTensorMemory off = non_tensor_memory(m, s, load_system(j.dump(), "sys.json"));
  EXPECT_EQ(off.nvls_communicators, 0);
  EXPECT_DOUBLE_EQ(off.userbuffers_bytes / kMiB, 336);
  EXPECT_DOUBLE_EQ(off.total(), 0.5 * kGiB + 2 * 294 * kMiB + 336 * kMiB);
  j["accelerator"]["nvls_channels"] = 16;
  const SystemConfig nvls = load_system(j.dump(), "sys.json");
  const NonTensorMemory on = non_tensor_memory(m, s, nvls);
  EXPECT_EQ(on.nvls_communicators, 2);
  EXPECT_DOUBLE_EQ(on.nvls_bytes / kMiB, 8 + 16);
  // The messages name the terms a plan holds.
  EXPECT_EQ(off.terms(), "CUDA context, NCCL buffers, TE userbuffers");
  EXPECT_EQ(on.terms(), "CUDA context, NCCL buffers, NVLS buffers, TE userbuffers");
  NonTensorMemory measured = on;
  measured.measured = true;
  measured.cuda_graph_bytes = 1;
  EXPECT_EQ(measured.terms(), "measured (accelerator.unusable_mem_gbs), CUDA-graph pool");
  // Written back, read again; a bad value is an error naming the key.
  EXPECT_EQ(load_system(system_to_json_text(nvls), "back.json").nvls_channels, 16);
  j["accelerator"]["nvls_channels"] = -1;
  EXPECT_THROW((void)load_system(j.dump(), "sys.json"), Error);
  // Without sequence parallelism Megatron does not overlap: no userbuffers.
  StrategyConfig no_sp = s;
  no_sp.enable_sequence_parallel = false;
  EXPECT_DOUBLE_EQ(non_tensor_memory(m, no_sp, nvls).userbuffers_bytes, 0);
}

// The flex dispatcher's buffers over the ep·etp group: DeepEP by default, HybridEP on request.
TEST(NonTensorMemory, FlexDispatcherBuffersOfAPlan) {
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  const ModelConfig m = test::preset_model("deepseek-v3");
  StrategyConfig s = strategy(R"("ep_size": 8, "moe_token_dispatcher_type": "flex")");
  const NonTensorMemory deepep = non_tensor_memory(m, s, sys);
  EXPECT_DOUBLE_EQ(deepep.ep_buffer_bytes, deepep_buffer_bytes(8, 7168, 20, 256, 128));
  s.moe_flex_dispatcher_backend = "hybridep";
  // 4096 tokens of one micro-batch (no sequence parallelism), bf16 dispatch: 8·4096·7168·4 B.
  EXPECT_DOUBLE_EQ(non_tensor_memory(m, s, sys).ep_buffer_bytes, 8.0 * 4096 * 7168 * 4);
  s.moe_token_dispatcher_type = "alltoall";
  EXPECT_DOUBLE_EQ(non_tensor_memory(m, s, sys).ep_buffer_bytes, 0);
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
