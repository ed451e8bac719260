// The host stream in estimates (default mode, the system's host.framework): a step that is
// host-bound without CUDA graphs and device-bound with them, the dropless MoE sync exposing the
// launch latency, and the trace's host thread. Hand computations in the comments; one rank, one
// micro-batch, no data parallelism, so the pipeline is the forward, the loss read and the
// backward.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_estimate.h"
#include "system/presets.h"
#include "plan/validate.h"
#include "estimate/estimate.h"
#include "test_presets.h"
#include "views/trace.h"

namespace trainsim {
namespace {

// The H100 preset with its host framework replaced (or removed: no host stream).
SystemConfig h100(const nlohmann::json& framework) {
  nlohmann::json j = nlohmann::json::parse(resolve_config("system", "h100-sxm-80g").text);
  if (framework.is_null()) {
    j["host"].erase("framework");
  } else {
    j["host"]["framework"] = framework;
  }
  return load_system(j.dump(), "sys.json");
}

// A slow host: 2 ms per eager op (kernel), nothing else but the graph replay and the sync read.
const nlohmann::json kSlowHost = {{"eager_op_us", 2000}, {"te_module_us", 0},     {"megatron_layer_us", 0},
                                  {"collective_us", 0},  {"graph_launch_us", 10}, {"sync_us", 10}};

StrategyConfig one_rank(const std::string& extra = "") {
  return load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 1, "world_size": 1)" +
                           (extra.empty() ? "" : ", " + extra) + "}",
                       "s.json");
}

ModelConfig llama_two_layers() {
  ModelConfig m = test::preset_model("llama3-8b");
  m.layer_num = 2;
  return m;
}

struct Sums {
  double fwd = 0, bwd = 0, host_fwd = 0, host_bwd = 0;
};
Sums sums(const Estimate& e) {
  Sums s;
  for (const OpCost& o : e.ranks[0].chunks[0]) {
    s.fwd += o.fwd_total_s();
    s.bwd += o.bwd_total_s();
    s.host_fwd += o.host_fwd_s;
    s.host_bwd += o.host_bwd_s;
  }
  return s;
}

// Kernels per phase of the one chunk (embedding, two layers, head), counted from its leaves.
std::array<double, 2> kernels(const ModelConfig& m, const StrategyConfig& s) {
  const Chunk c = build_chunk(m, s, m.vocab_size, ChunkSpec{true, true, 2, 0, 0, 0});
  std::array<double, 2> n{};
  auto add = [&](const Leaf& l) {
    n[0] += static_cast<double>(l.kernels[kFwd].size());
    n[1] += static_cast<double>(l.kernels[kBwdAct].size() + l.kernels[kBwdW].size());
  };
  for (const Leaf& l : c.pre) add(l);
  for (const auto& layer : c.layers)
    for (const Leaf& l : c.templates[static_cast<size_t>(layer.template_index)]->leaves) add(l);
  for (const Leaf& l : c.post) add(l);
  return n;
}

// Without graphs every kernel costs the slow host 2 ms: host H_f = 2 ms × forward kernels,
// H_b = 2 ms × backward kernels, both above the device's D_f, D_b. The device ends each pass
// with its last launch: pipeline = H_f + 10 µs (the loss read) + H_b. With CUDA graphs (every
// layer captured: one 10 µs replay per layer and pass; embedding and head stay eager) the host
// runs ahead and the device runs back to back from the first launch c (one eager op, 2 ms):
// pipeline = c + D_f + 10 µs + c + D_b.
TEST(HostStream, HostBoundWithoutGraphsDeviceBoundWithThem) {
  const ModelConfig m = llama_two_layers();
  const SystemConfig slow = h100(kSlowHost), none = h100(nullptr);
  const StrategyConfig eager = one_rank(), graphed = one_rank(R"("cuda_graph_impl": "transformer_engine")");
  const Estimate device_only = estimate(m, eager, none);
  const Sums d = sums(device_only);
  EXPECT_EQ(d.host_fwd, 0);
  EXPECT_NEAR(device_only.pipeline_s, d.fwd + d.bwd, 1e-12);

  const Estimate e = estimate(m, eager, slow);
  const Sums h = sums(e);
  const std::array<double, 2> n = kernels(m, eager);
  EXPECT_NEAR(h.host_fwd, 2e-3 * n[0], 1e-12);
  EXPECT_NEAR(h.host_bwd, 2e-3 * n[1], 1e-12);
  ASSERT_GT(h.host_fwd, d.fwd);  // host-bound
  ASSERT_GT(h.host_bwd, d.bwd);
  EXPECT_NEAR(h.fwd, d.fwd, 1e-15);  // the device's work is the same
  EXPECT_NEAR(e.pipeline_s, h.host_fwd + 10e-6 + h.host_bwd, 1e-9);

  const Estimate g = estimate(m, graphed, slow);
  const Sums gh = sums(g);
  ASSERT_LT(gh.host_fwd - d.fwd, 2e-3);  // device-bound
  ASSERT_LT(gh.host_bwd - d.bwd, 2e-3);
  EXPECT_NEAR(g.pipeline_s, 2e-3 + d.fwd + 10e-6 + 2e-3 + d.bwd, 1e-9);
  EXPECT_LT(g.iteration_time_s, e.iteration_time_s);
}

// Mixtral 8x7B, two MoE layers, all experts on the one rank, the preset's host (6 µs per launch,
// 10 µs per read). Dropless (no padding to capacity): each MoE layer's dispatch reads its token
// counts, the host waits for the device there and the device idles for the read and the next
// launch, 16 µs per layer. With the first launch (6 µs) and the loss read before the backward's
// launch (16 µs) the device-bound pipeline is the device's plus 2 · 16 + 6 + 16 = 54 µs; padded
// to capacity (fixed shapes, no read) 22 µs.
TEST(HostStream, DroplessSyncExposesTheLaunchLatency) {
  ModelConfig m = test::preset_model("mixtral-8x7b");
  m.layer_num = 2;
  const SystemConfig preset = test::preset_system("h100-sxm-80g"), none = h100(nullptr);
  ASSERT_TRUE(preset.host_framework);
  EXPECT_NEAR(preset.host_framework->eager_op_s, 6e-6, 1e-18);
  EXPECT_NEAR(preset.host_framework->sync_s, 10e-6, 1e-18);
  const StrategyConfig s = one_rank();
  for (bool pad : {false, true}) {
    m.moe_pad_expert_input_to_capacity = pad;
    const Estimate base = estimate(m, s, none), e = estimate(m, s, preset);
    EXPECT_NEAR(e.pipeline_s - base.pipeline_s, pad ? 22e-6 : 54e-6, 1e-9) << "pad " << pad;
  }
}

// The trace draws the host as a thread of each stage: with the slow host the first forward's
// launch spans [0, H_f] on it, and the device (compute thread) idles until H_f − D_f.
TEST(HostStream, TraceShowsTheHostThread) {
  const ModelConfig m = llama_two_layers();
  const Estimate e = estimate(m, one_rank(), h100(kSlowHost));
  const Sums h = sums(e);
  const auto doc = nlohmann::json::parse(trace_json(e, {}));
  int host_tid = -1;
  for (const auto& ev : doc["traceEvents"])
    if (ev["ph"] == "M" && ev["name"] == "thread_name" && ev["args"]["name"] == "host") host_tid = ev["tid"].get<int>();
  ASSERT_GT(host_tid, 0);
  double launch_end = -1, first_device = 1e300;
  for (const auto& ev : doc["traceEvents"]) {
    if (ev["ph"] != "X") continue;
    const double ts = ev["ts"].get<double>(), dur = ev["dur"].get<double>();
    if (ev["tid"] == host_tid && ev["name"] == "launch mb0" && ts == 0) launch_end = ts + dur;
    if (ev["tid"] == 1) first_device = std::min(first_device, ts);
  }
  EXPECT_NEAR(launch_end, h.host_fwd * 1e6, 1e-3);
  EXPECT_NEAR(first_device, (h.host_fwd - h.fwd) * 1e6, 1e-3);
}

// A graph scope without CUDA graphs is accepted and turned off (Megatron reads it only with an
// implementation); compat mode (SimuMax v1.2) has no CUDA graphs.
TEST(HostStream, GraphKeysWithoutEffectAndInCompatMode) {
  const ModelConfig m = llama_two_layers();
  StrategyConfig s = one_rank(R"("cuda_graph_scope": ["attn"])");
  const std::vector<NoEffect> off = normalize_strategy(m, s, Mode::Default);
  ASSERT_EQ(off.size(), 1u);
  EXPECT_EQ(no_effect_line(off[0]), "cuda_graph_scope=[\"attn\"] changes nothing without CUDA graphs; turned off");
  EXPECT_TRUE(s.cuda_graph_scope.empty());
  const StrategyConfig graphs = one_rank(R"("cuda_graph_impl": "local", "cuda_graph_scope": ["attn"])");
  StrategyConfig kept = graphs;
  EXPECT_TRUE(normalize_strategy(m, kept, Mode::Default).empty());
  const std::vector<Issue> issues =
      validate_plan(m, graphs, test::preset_system("h100-sxm-80g"), {"m.json", "s.json", "y.json"}, Mode::SimuMax12);
  size_t graph_issues = 0;
  for (const Issue& i : issues) graph_issues += i.path == "/cuda_graph_impl" || i.path == "/cuda_graph_scope";
  EXPECT_EQ(graph_issues, 2u);
  // Megatron rejects the older switch beside an implementation.
  EXPECT_THROW((void)one_rank(R"("enable_cuda_graph": true, "cuda_graph_impl": "transformer_engine")"), ConfigError);
}

}  // namespace
}  // namespace trainsim
