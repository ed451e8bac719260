// Host costs of ops, CUDA graph capture and passes with sync points, against hand-computed values.
#include "inputs/strategy_config.h"
#include "compute/host_cost.h"

#include <gtest/gtest.h>

#include "core/units.h"

namespace trainsim {
namespace {

HostFramework framework() {
  HostFramework f;
  f.eager_op_s = 6e-6;
  f.te_module_s = 20e-6;
  f.megatron_layer_s = 30e-6;
  f.collective_s = 15e-6;
  f.graph_launch_s = 10e-6;
  f.sync_s = 10e-6;
  return f;
}

Leaf leaf(std::string_view name, int kernels, int comms, bool te) {
  Leaf l;
  l.name = name;
  for (int i = 0; i < kernels; ++i) l.kernels[kFwd].push_back(Kernel{});
  for (int i = 0; i < comms; ++i) l.comms[kFwd].push_back({Collective::AllReduce, Group::TP, 1, 2, "tp"});
  l.kernels[kBwdW].push_back(Kernel{});
  l.te_module = te;
  return l;
}

// A TE Linear with a GEMM and its TP all-reduce: 6 + 15 + 20 = 41 µs; the same kernel as an eager
// op: 6 µs; a phase with nothing to issue: 0; the weight gradient counted in the backward call
// of its input gradient: its kernel only, 6 µs.
TEST(HostCost, LeafByKindAndFramework) {
  const HostFramework f = framework();
  EXPECT_NEAR(leaf_host_s(f, leaf("linear_proj", 1, 1, true), kFwd), 41e-6, 1e-15);
  EXPECT_NEAR(leaf_host_s(f, leaf("swiglu", 1, 0, false), kFwd), 6e-6, 1e-15);
  EXPECT_NEAR(leaf_host_s(f, leaf("permutation", 2, 0, false), kFwd), 12e-6, 1e-15);
  EXPECT_EQ(leaf_host_s(f, leaf("rotary_emb", 0, 0, true), kFwd), 0);
  EXPECT_NEAR(leaf_host_s(f, leaf("linear_fc1", 1, 0, true), kBwdW, false), 6e-6, 1e-15);
  EXPECT_NEAR(leaf_host_s(f, leaf("linear_fc1", 1, 0, true), kBwdW), 26e-6, 1e-15);
}

LayerTemplate moe_layer(bool sync) {
  LayerTemplate t;
  t.moe = true;
  for (const char* n : {"input_layernorm", "linear_qkv", "core_attention", "linear_proj", "pre_mlp_layernorm", "router",
                        "permutation", "experts.linear_fc1", "unpermutation"})
    t.leaves.push_back(leaf(n, 1, 0, false));
  t.leaves[6].host_sync = sync;
  return t;
}

StrategyConfig graphs(std::vector<std::string> scope) {
  StrategyConfig s;
  s.cuda_graph_impl = "transformer_engine";
  s.cuda_graph_scope = std::move(scope);
  return s;
}

TEST(HostCost, GraphScopes) {
  EXPECT_FALSE(graph_capture(StrategyConfig{}).any());
  StrategyConfig scope_only;
  scope_only.cuda_graph_scope = {"attn"};
  EXPECT_FALSE(graph_capture(scope_only).any());  // a scope without graphs captures nothing
  StrategyConfig older;
  older.enable_cuda_graph = true;  // Megatron's older switch: the local implementation
  EXPECT_EQ(older.cuda_graphs(), "local");
  const GraphCapture whole = graph_capture(older);
  EXPECT_TRUE(whole.attn && whole.mlp && whole.moe && !whole.all);

  // Token drop with padding (no sync): the empty scope holds the whole layer, one replay.
  const LayerTemplate padded = moe_layer(false);
  EXPECT_EQ(captured_leaves(padded, whole), std::vector<bool>(9, true));
  EXPECT_EQ(graph_launches(captured_leaves(padded, whole)), 1);
  // attn: the four attention leaves; the MoE part stays eager.
  const std::vector<bool> attn = captured_leaves(padded, graph_capture(graphs({"attn"})));
  EXPECT_EQ(attn, (std::vector<bool>{true, true, true, true, false, false, false, false, false}));
  // Dropless: what follows the token-count read stays eager, whatever the scope says.
  const LayerTemplate dropless = moe_layer(true);
  const std::vector<bool> all = captured_leaves(dropless, whole);
  EXPECT_EQ(all, (std::vector<bool>{true, true, true, true, true, true, false, false, false}));
  EXPECT_EQ(graph_launches(all), 1);
  // attn + moe_router: two runs, two replays per pass.
  const std::vector<bool> two = captured_leaves(dropless, graph_capture(graphs({"attn", "moe_router"})));
  EXPECT_EQ(two, (std::vector<bool>{true, true, true, true, false, true, false, false, false}));
  EXPECT_EQ(graph_launches(two), 2);
  EXPECT_EQ(captured_leaves(dropless, graph_capture(graphs({"full_iteration"}))), std::vector<bool>(9, true));
}

// Three segments (two syncs), sync 10 µs, launch 6 µs:
//   first (host 50, device 100): run as any pass;
//   middle (host 40, device 200): 10 + max(6 + 200, 40) = 216, host and device alike;
//   last (host 300, device 100): device 10 + max(6 + 100, 300) = 310, host 10 + 300 = 310.
// Device rest 216 + 310 = 526 µs, host rest 216 + 310 = 526 µs (host-bound at the end).
TEST(HostCost, SyncedPassByHand) {
  const HostSegment seg[] = {{50e-6, 100e-6}, {40e-6, 200e-6}, {300e-6, 100e-6}};
  const SyncedPass p = synced_pass(seg, 10e-6, 6e-6);
  EXPECT_NEAR(p.host_first, 50e-6, 1e-15);
  EXPECT_NEAR(p.device_first, 100e-6, 1e-15);
  EXPECT_NEAR(p.device_rest, 526e-6, 1e-12);
  EXPECT_NEAR(p.host_rest, 526e-6, 1e-12);
  // Device-bound last segment (host 20): device 10 + 106 = 116, host 10 + 20 = 30.
  const HostSegment seg2[] = {{50e-6, 100e-6}, {20e-6, 100e-6}};
  const SyncedPass q = synced_pass(seg2, 10e-6, 6e-6);
  EXPECT_NEAR(q.device_rest, 116e-6, 1e-12);
  EXPECT_NEAR(q.host_rest, 30e-6, 1e-12);
}

}  // namespace
}  // namespace trainsim
