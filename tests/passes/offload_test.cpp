// Fine-grained activation offloading (fine_grained_activation_offloading, offload_modules,
// offload_tensors, min_offloaded_tensor_size), hand-computed on a small GPT layer: h 1024, 8 heads of 128, GELU MLP
// of 4096; s 2048, b 1, tp 1, bf16, flash attention (T·h·2 B = 4 MiB).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_estimate.h"
#include "plan/validate.h"
#include "core/units.h"
#include "estimate/estimate.h"
#include "memory/activation.h"
#include "model/graph.h"
#include "plan/plan.h"
#include "test_errors.h"
#include "test_presets.h"

namespace trainsim {
namespace {

ModelConfig gpt_small(int64_t layers = 4) {
  return load_model(R"({"model_type": "dense", "model_name": "gpt_small", "hidden_size": 1024, "head_num": 8,
                        "kv_head_num": 8, "head_size": 128, "intermediate_size": 4096, "layer_num": )" +
                        std::to_string(layers) + R"(, "vocab_size": 1024, "use_swiglu": false})",
                    "gpt_small.json");
}

StrategyConfig strategy(const std::string& extra) {
  return load_strategy(R"({"seq_len": 2048, "micro_batch_size": 1, "micro_batch_num": 1, "world_size": 1)" +
                           (extra.empty() ? "" : ", " + extra) + "}",
                       "s.json");
}

SystemConfig h100_link(double gbps) {
  nlohmann::json j = nlohmann::json::parse(resolve_config("system", "h100-sxm-80g").text);
  j["host"] = {{"link_gbps", gbps}};
  return load_system(j.dump(), "sys.json");
}

ActivationResult walk(const std::string& extra) {
  const ModelConfig m = gpt_small();
  const StrategyConfig s = strategy(extra);
  const Plan plan = resolve_plan(m, s, h100_link(50), Mode::Default);
  ChunkSpec spec = plan.chunks[0][0];
  spec.embedding = spec.head = false;
  return walk_activations(build_chunk(m, s, plan.padded_vocab, spec, ChunkEnv{.mode = Mode::Default}), s);
}

const std::string kAttn =
    R"("fine_grained_activation_offloading": true, "offload_modules": ["core_attn", "attn_proj"])";

// A layer keeps 64 + 1/32 MiB (tests/passes/megatron_recompute_test.cpp). core_attn hands over
// q, k, v and lse (12 + 1/32 MiB), attn_proj its input (4 MiB): 48 MiB stay, 16 + 1/32 MiB go to
// the host, per layer.
TEST(ActivationOffload, ListedModulesMoveTheirSavedTensorsToTheHost) {
  const ActivationResult off = walk(kAttn);
  EXPECT_DOUBLE_EQ(off.cache_per_mb / kMiB, 4 * 48.0);
  EXPECT_DOUBLE_EQ(off.offloaded_per_mb / kMiB, 4 * (16 + 1.0 / 32));
  EXPECT_DOUBLE_EQ(walk("").offloaded_per_mb, 0);
}

// With an 8 MiB floor the 4 MiB projection input stays on the GPU.
TEST(ActivationOffload, SmallTensorsStay) {
  const ActivationResult off = walk(kAttn + R"(, "min_offloaded_tensor_size": 8388608)");
  EXPECT_DOUBLE_EQ(off.cache_per_mb / kMiB, 4 * 52.0);
  EXPECT_DOUBLE_EQ(off.offloaded_per_mb / kMiB, 4 * (12 + 1.0 / 32));
}

// Host memory: one micro-batch in flight (pp 1) holds 4 × (16 + 1/32) MiB. Time: at 1 GiB/s a
// layer's copy takes (16 + 1/32) MiB / 1 GiB/s = 15.656 ms, far longer than its forward F, so each
// layer's forward grows by copy − F: Δ = 4·copy − 4·F, with 2·F = fwd(4 layers) − fwd(2 layers).
TEST(ActivationOffload, HostMemoryAndExposedCopies) {
  const SystemConfig slow = h100_link(1);
  const Estimate none = estimate(gpt_small(), strategy(""), slow);
  const Estimate off = estimate(gpt_small(), strategy(kAttn), slow);
  const Estimate half = estimate(gpt_small(2), strategy(""), slow);
  EXPECT_DOUBLE_EQ(off.stages[0].host_bytes / kMiB, 4 * (16 + 1.0 / 32));
  const double copy = (16 + 1.0 / 32) * kMiB / kGiB;
  const double layer_fwd = (none.stage_times[0].fwd_per_mb_s - half.stage_times[0].fwd_per_mb_s) / 2;
  EXPECT_NEAR(off.stage_times[0].fwd_per_mb_s - none.stage_times[0].fwd_per_mb_s, 4 * (copy - layer_fwd), 1e-12);
  // A link fast enough to hide the copies changes no time.
  const SystemConfig fast = h100_link(1e5);
  EXPECT_DOUBLE_EQ(estimate(gpt_small(), strategy(kAttn), fast).iteration_time_s,
                   estimate(gpt_small(), strategy(""), fast).iteration_time_s);
}

// offload_tensors pre_mlp_layernorm_output: the dense MLP's fc1 keeps the normed input,
// T·h·2 = 2048·1024·2 B = 4 MiB per layer: 60 + 1/32 MiB stay.
TEST(ActivationOffload, TaggedNormOutputMovesToTheHost) {
  const ActivationResult off =
      walk(R"("fine_grained_activation_offloading": true, "offload_tensors": ["pre_mlp_layernorm_output"])");
  EXPECT_DOUBLE_EQ(off.cache_per_mb / kMiB, 4 * (60 + 1.0 / 32));
  EXPECT_DOUBLE_EQ(off.offloaded_per_mb / kMiB, 4 * 4.0);
}

// A MoE layer (4 experts, top-2, capacity 1 with padding, h 1024): the router keeps the normed
// input, T·h·2 = 4 MiB (pre_mlp_layernorm_output); the experts' fc1 keeps the dispatched tokens,
// ceil(2·2048/4)·4 = 4096 tokens · 1024 · 2 B = 8 MiB (dispatched_input).
TEST(ActivationOffload, TaggedMoeTensorsMoveToTheHost) {
  const ModelConfig m = load_model(
      R"({"model_type": "moe", "model_name": "moe_small", "hidden_size": 1024, "head_num": 8, "kv_head_num": 8,
          "head_size": 128, "intermediate_size": 1024, "moe_ffn_hidden_size": 1024, "layer_num": 1,
          "dense_layers": 0, "expert_num": 4, "topk": 2, "vocab_size": 1024, "use_swiglu": false,
          "moe_pad_expert_input_to_capacity": true, "capacity": 1})",
      "moe_small.json");
  const StrategyConfig s = strategy(R"("fine_grained_activation_offloading": true,
                                       "offload_tensors": ["dispatched_input", "pre_mlp_layernorm_output"])");
  const Plan plan = resolve_plan(m, s, h100_link(50), Mode::Default);
  ChunkSpec spec = plan.chunks[0][0];
  spec.embedding = spec.head = false;
  const Chunk chunk = build_chunk(m, s, plan.padded_vocab, spec, ChunkEnv{.mode = Mode::Default});
  double router = -1, fc1 = -1;
  for (const auto& l : chunk.templates[0]->leaves) {
    if (l.name == "router") router = l.offload_bytes;
    if (l.name == "experts.linear_fc1") fc1 = l.offload_bytes;
  }
  EXPECT_DOUBLE_EQ(router / kMiB, 4);
  EXPECT_DOUBLE_EQ(fc1 / kMiB, 8);
}

TEST(ActivationOffload, SettingsThatCannotWorkAreErrors) {
  auto issues = [&](const std::string& extra, const SystemConfig& sys, Mode mode) {
    std::string out;
    for (const auto& i : validate_plan(gpt_small(), strategy(extra), sys, PlanSources{}, mode))
      out += i.source + " " + i.path + ": " + i.message + "\n";
    return out;
  };
  // A system without its host section (every preset has one).
  SystemConfig bare = test::preset_system("h100-sxm-80g");
  bare.host_link_bytes_per_s = 0;
  bare.host_adam_bytes_per_s = 0;
  EXPECT_EQ(issues(R"("offload_modules": ["core_attn"])", bare, Mode::Default),
            "strategy /offload_modules: changes nothing without fine_grained_activation_offloading; set it to true\n");
  EXPECT_EQ(issues(R"("fine_grained_activation_offloading": true, "offload_modules": ["expert_fc1"])", bare,
                   Mode::Default),
            "strategy /offload_modules: 'expert_fc1' needs a moe model\n"
            "system /host/link_gbps: fine_grained_activation_offloading needs the host link's bandwidth per GPU and "
            "direction in GiB/s (PCIe Gen5 x16 moves about 50)\n");
  EXPECT_EQ(issues(R"("fine_grained_activation_offloading": true)", h100_link(50), Mode::Default),
            "strategy /offload_modules: fine_grained_activation_offloading needs at least one module: attn_norm, "
            "core_attn, attn_proj, mlp_norm, expert_fc1, moe_act (or a tensor in offload_tensors)\n");
  EXPECT_EQ(issues(R"("offload_tensors": ["pre_mlp_layernorm_output"])", bare, Mode::Default),
            "strategy /offload_tensors: changes nothing without fine_grained_activation_offloading; set it to true\n");
  EXPECT_EQ(issues(R"("fine_grained_activation_offloading": true, "offload_tensors": ["dispatched_input"])",
                   h100_link(50), Mode::Default),
            "strategy /offload_tensors: 'dispatched_input' needs a moe model\n");
  EXPECT_EQ(test::error_of([] { (void)strategy(R"("offload_tensors": ["dispatched"])"); }),
            "s.json: /offload_tensors/0: unknown value 'dispatched'; valid values: dispatched_input, "
            "pre_mlp_layernorm_output");
  EXPECT_EQ(issues(kAttn, h100_link(50), Mode::SimuMax12),
            "strategy /fine_grained_activation_offloading: is not part of SimuMax v1.2; remove it or use the "
            "default mode\n");
  EXPECT_EQ(test::error_of([] { (void)strategy(R"("offload_modules": ["core_atn"])"); }),
            "s.json: /offload_modules/0: unknown value 'core_atn'; valid values: attn_norm, core_attn, attn_proj, "
            "mlp_norm, expert_fc1, moe_act; did you mean 'core_attn'?");
}

}  // namespace
}  // namespace trainsim
