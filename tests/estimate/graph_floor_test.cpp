// The launch floor of memory-bound kernels, eager and inside a CUDA graph (default mode): the
// system file's `graph_latency_us`, the kernel's cost in and out of a captured scope, and the
// kernels of a Qwen3-30B-A3B-like MoE layer (graphs change no launch, only what each pays).
// Hand computations in the comments.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "compute/cost.h"
#include "core/error.h"
#include "estimate/estimate.h"
#include "system/presets.h"
#include "test_estimate.h"
#include "test_presets.h"

namespace trainsim {
namespace {

// The H100 preset with every memory-bound class at 30 µs per eager launch and, when given,
// `graph_us` per kernel replayed from a graph (the B200 measured preset's pair, on H100 peaks).
SystemConfig h100_floors(std::optional<double> graph_us) {
  nlohmann::json j = nlohmann::json::parse(resolve_config("system", "h100-sxm-80g").text);
  for (auto& [name, bw] : j["accelerator"]["bandwidth"].items()) {
    bw["latency_us"] = 30;
    if (graph_us) bw["graph_latency_us"] = *graph_us;
  }
  return load_system(j.dump(), "sys.json");
}

StrategyConfig one_rank(const std::string& extra = "") {
  return load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 1, "world_size": 1)" +
                           (extra.empty() ? "" : ", " + extra) + "}",
                       "s.json");
}

const OpCost& op_named(const Estimate& e, const std::string& name) {
  for (const OpCost& o : e.ranks[0].chunks[0])
    if (o.name == name && o.layer == 0) return o;
  throw Error("no op " + name);
}

TEST(GraphFloor, SystemFileField) {
  // Absent: the class's eager latency is its graph floor too (the datasheet presets' 10 µs).
  const SystemConfig preset = test::preset_system("h100-sxm-80g");
  const BandwidthConfig& d = preset.bandwidths.at("default");
  EXPECT_FALSE(d.graph_latency_s.has_value());
  EXPECT_DOUBLE_EQ(d.launch_floor_s(false), 10e-6);
  EXPECT_DOUBLE_EQ(d.launch_floor_s(true), 10e-6);
  const SystemConfig sys = h100_floors(4.0);
  const BandwidthConfig& b = sys.bandwidths.at("permute_fwd");
  EXPECT_DOUBLE_EQ(b.launch_floor_s(false), 30e-6);
  EXPECT_DOUBLE_EQ(b.launch_floor_s(true), 4e-6);
  // Written back and read again.
  const SystemConfig again = load_system(system_to_json_text(sys), "again.json");
  EXPECT_DOUBLE_EQ(again.bandwidths.at("permute_fwd").launch_floor_s(true), 4e-6);
  EXPECT_EQ(again.fingerprint, sys.fingerprint);
  EXPECT_NE(h100_floors(5.0).fingerprint, sys.fingerprint);

  nlohmann::json j = nlohmann::json::parse(resolve_config("system", "h100-sxm-80g").text);
  j["accelerator"]["bandwidth"]["default"]["graph_latency_us"] = -1;
  try {
    (void)load_system(j.dump(), "neg.json");
    FAIL() << "a negative graph floor loaded";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/accelerator/bandwidth/default/graph_latency_us"), std::string::npos)
        << e.what();
  }
  // A network's bandwidth has no graph floor (collectives are not memory-bound kernels).
  j = nlohmann::json::parse(resolve_config("system", "h100-sxm-80g").text);
  j["networks"]["high_intra_node"]["bandwidth"]["graph_latency_us"] = 1;
  EXPECT_THROW((void)load_system(j.dump(), "net.json"), ConfigError);
}

// One entry of 3 launches moving 0.5 GiB through a class of 1000 GiB/s at 0.5: 1 ms of
// transfer, plus 3 × 30 µs eager = 1090 µs, 3 × 10 µs replayed from a graph = 1030 µs.
TEST(GraphFloor, KernelCostByHand) {
  nlohmann::json j = nlohmann::json::parse(resolve_config("system", "h100-sxm-80g").text);
  j["accelerator"]["bandwidth"]["default"] = {
      {"gbps", 1000}, {"efficient_factor", 0.5}, {"latency_us", 30}, {"graph_latency_us", 10}};
  const SystemConfig sys = load_system(j.dump(), "sys.json");
  ClassTable classes(sys);
  Kernel k;
  k.bytes = 536870912.0;
  k.launches = 3;
  EXPECT_NEAR(kernel_cost(classes, k, nullptr).time_s, 1090e-6, 1e-15);
  EXPECT_NEAR(kernel_cost(classes, k, nullptr, true).time_s, 1030e-6, 1e-15);
  // Without graph_latency_us the graphed kernel pays the eager 30 µs.
  j["accelerator"]["bandwidth"]["default"].erase("graph_latency_us");
  const SystemConfig eager_only = load_system(j.dump(), "sys.json");
  ClassTable eager_classes(eager_only);
  EXPECT_NEAR(kernel_cost(eager_classes, k, nullptr, true).time_s, 1090e-6, 1e-15);
}

// Llama 3 8B cut to two layers on one H100, s = 4096, graphs on the attention part only
// (cuda_graph_scope attn). The input RMSNorm (attention part) reads x and writes y, 4096 · 4096
// bf16 each, plus the 4096 bf16 weight: 67,117,056 bytes in one launch; at 3119.93 GiB/s × 0.8
// that is 25.0437 µs, + 30 µs eager = 55.0437 µs, + 10 µs in the graph = 35.0437 µs. The
// pre-MLP norm (MLP part, not captured) keeps its eager floor.
TEST(GraphFloor, MemoryBoundOpInsideAndOutsideTheGraphScope) {
  ModelConfig m = test::preset_model("llama3-8b");
  m.layer_num = 2;
  const SystemConfig sys = h100_floors(10.0);
  const Estimate eager = estimate(m, one_rank(), sys);
  const Estimate graphed = estimate(m, one_rank(R"("cuda_graph_impl": "local", "cuda_graph_scope": ["attn"])"), sys);
  const double transfer = 67117056.0 / (3119.93 * 1073741824.0 * 0.8);
  const OpCost& norm_e = op_named(eager, "input_layernorm");
  const OpCost& norm_g = op_named(graphed, "input_layernorm");
  EXPECT_NEAR(norm_e.fwd_s, transfer + 30e-6, 1e-12);
  EXPECT_NEAR(norm_g.fwd_s, transfer + 10e-6, 1e-12);
  EXPECT_NEAR(norm_e.fwd_s * 1e6, 55.0437, 1e-4);
  EXPECT_NEAR(norm_g.fwd_s * 1e6, 35.0437, 1e-4);
  EXPECT_DOUBLE_EQ(op_named(graphed, "pre_mlp_layernorm").fwd_s, op_named(eager, "pre_mlp_layernorm").fwd_s);
  // Without the field the graph floor is the eager one: nothing moves.
  const SystemConfig same = h100_floors(std::nullopt);
  const Estimate a = estimate(m, one_rank(), same);
  const Estimate b = estimate(m, one_rank(R"("cuda_graph_impl": "local", "cuda_graph_scope": ["attn"])"), same);
  EXPECT_DOUBLE_EQ(op_named(a, "input_layernorm").fwd_s, op_named(b, "input_layernorm").fwd_s);
}

// A Qwen3-30B-A3B-like MoE layer (hidden 2048, 32 heads of 128, 4 KV groups, 128 experts of
// 768, top-8, token drop with padding: no sync, the whole layer captured) on one rank. The
// graph changes what each memory-bound launch pays, not the launches: the layer's kernels are
// the same entries with the same launch counts, and its forward gets faster by at most
// 20 µs per launch (a launch whose kernel is compute-bound gains less).
TEST(GraphFloor, MoeLayerKeepsItsLaunches) {
  const ModelConfig m = load_model(
      R"({"model_type": "moe", "model_name": "qwen3_30b_like", "hidden_size": 2048, "head_num": 32,
          "kv_head_num": 4, "head_size": 128, "intermediate_size": 6144, "moe_ffn_hidden_size": 768,
          "layer_num": 1, "dense_layers": 0, "expert_num": 128, "topk": 8, "vocab_size": 151936,
          "use_swiglu": true, "moe_pad_expert_input_to_capacity": true, "capacity": 1.0})",
      "qwen3_30b_like.json");
  const StrategyConfig eager_s = one_rank(), graph_s = one_rank(R"("cuda_graph_impl": "local")");
  auto launches = [&](const StrategyConfig& s) {
    const Chunk c = build_chunk(m, s, m.vocab_size, ChunkSpec{false, false, 1, 0, 0, 0});
    uint64_t n = 0;
    for (const Leaf& l : c.templates[0]->leaves)
      for (int ph = 0; ph < 3; ++ph)
        for (const Kernel& k : l.kernels[static_cast<size_t>(ph)]) n += k.launches;
    return n;
  };
  const uint64_t n = launches(eager_s);
  EXPECT_EQ(launches(graph_s), n);
  EXPECT_GT(n, 50u);
  const SystemConfig sys = h100_floors(10.0);
  const Estimate e = estimate(m, eager_s, sys), g = estimate(m, graph_s, sys);
  double fe = 0, fg = 0;
  for (const OpCost& o : e.ranks[0].chunks[0])
    if (o.layer == 0) fe += o.fwd_s + o.bwd_s;
  for (const OpCost& o : g.ranks[0].chunks[0])
    if (o.layer == 0) fg += o.fwd_s + o.bwd_s;
  EXPECT_GT(fe - fg, 0);
  EXPECT_LE(fe - fg, 20e-6 * static_cast<double>(n) + 1e-12);
}

}  // namespace
}  // namespace trainsim
