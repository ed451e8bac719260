// Megatron's recompute modules on a MoE layer (default mode): routed_experts and the pieces the
// EP all-to-all overlap cuts a layer into (a2a_overlap_attn, _post_attn, _mlp), hand-computed.
//
// A small MoE layer: h 1024, 8 heads of 128, 4 experts of FFN 512 (SwiGLU), top-2, a shared
// expert of 1024, sequence 2048, micro-batch 1, tp 1, ep 1, bf16, padded to capacity 1.0 (no
// load imbalance): T = 2048 tokens, P = ceil(2·2048/4)·4 = 4096 routed copies, each expert's
// GEMMs see 1024 tokens. Expert caches: fc1's input P·h·2 = 8 MiB, the SwiGLU's input
// P·2·512·2 = 8 MiB, fc2's input P·512·2 = 4 MiB: 20 MiB, of which routed_experts keeps fc1's
// input (the checkpoint) and drops 12 MiB.
#include <gtest/gtest.h>

#include "core/units.h"
#include "memory/activation.h"
#include "model/graph.h"
#include "plan/plan.h"
#include "test_errors.h"
#include "test_presets.h"

namespace trainsim {
namespace {

using test::error_of;

ModelConfig moe_small() {
  return load_model(R"({"model_type": "moe", "model_name": "moe_small", "hidden_size": 1024, "head_num": 8,
                        "kv_head_num": 8, "head_size": 128, "intermediate_size": 4096, "moe_ffn_hidden_size": 512,
                        "moe_shared_expert_intermediate_size": 1024, "layer_num": 1, "dense_layers": 0,
                        "expert_num": 4, "topk": 2, "vocab_size": 1024, "use_swiglu": true,
                        "moe_pad_expert_input_to_capacity": true, "capacity": 1.0})",
                    "moe_small.json");
}

StrategyConfig strategy(const std::string& extra) {
  return load_strategy(R"({"seq_len": 2048, "micro_batch_size": 1, "micro_batch_num": 4, "world_size": 2,
                           "ep_size": 2)" + (extra.empty() ? "" : ", " + extra) + "}",
                       "s.json");
}

// Bytes the layer keeps for the backward (MiB), and its leaves' recompute flags.
Chunk layer(const std::string& extra) {
  const ModelConfig m = moe_small();
  const StrategyConfig s = strategy(extra);
  const Plan plan = resolve_plan(m, s, test::preset_system("h100-sxm-80g"), Mode::Default);
  ChunkSpec spec = plan.chunks[0][0];
  spec.embedding = spec.head = false;
  return build_chunk(m, s, plan.padded_vocab, spec, plan.chunk_env);
}
double cache_mib(const std::string& extra) {
  return walk_activations(layer(extra), strategy(extra)).cache_per_mb / kMiB;
}
bool recomputed(const Chunk& c, std::string_view leaf) {
  for (const Leaf& l : c.templates[0]->leaves)
    if (l.name == leaf) return l.recompute;
  ADD_FAILURE() << "no leaf " << leaf;
  return false;
}

constexpr const char* kSelective = R"("recompute_granularity": "selective", "recompute_modules": )";

// With ep 2 each rank holds 2 experts and receives, from both EP ranks, the copies routed to
// them: 2 experts × 1024 tokens × ep 2 = 4096, as above.
TEST(RecomputeModulesMoe, RoutedExpertsKeepOnlyTheDispatchedTokens) {
  const double none = cache_mib("");
  const double routed = cache_mib(std::string(kSelective) + R"(["routed_experts"])");
  EXPECT_DOUBLE_EQ(none - routed, 8 + 4);  // the SwiGLU's and fc2's inputs; fc1's input stays
  const Chunk c = layer(std::string(kSelective) + R"(["routed_experts"])");
  EXPECT_TRUE(recomputed(c, "experts.linear_fc1"));
  EXPECT_TRUE(recomputed(c, "expert_swiglu"));
  EXPECT_TRUE(recomputed(c, "experts.linear_fc2"));
  EXPECT_FALSE(recomputed(c, "router"));
  EXPECT_FALSE(recomputed(c, "shared_expert.linear_fc1"));
}

TEST(RecomputeModulesMoe, A2aOverlapPiecesNeedTheOverlap) {
  EXPECT_EQ(error_of([] { layer(std::string(kSelective) + R"(["a2a_overlap_mlp"])"); }),
            "strategy: /megatron_recompute_modules: 'a2a_overlap_mlp' recomputes a piece of the EP all-to-all "
            "overlap: it needs a moe model and overlap_moe_expert_parallel_comm (--overlap-moe-expert-parallel-comm)");
  const std::string overlap = R"("overlap_moe_expert_parallel_comm": true, )";
  const Chunk mlp = layer(overlap + kSelective + R"(["a2a_overlap_mlp"])");
  EXPECT_TRUE(recomputed(mlp, "expert_swiglu"));
  EXPECT_TRUE(recomputed(mlp, "shared_expert.linear_fc2"));
  const Chunk attn = layer(overlap + kSelective + R"(["a2a_overlap_attn"])");
  EXPECT_TRUE(recomputed(attn, "input_layernorm"));
  EXPECT_TRUE(recomputed(attn, "core_attention"));
  EXPECT_FALSE(recomputed(attn, "pre_mlp_layernorm"));
  const Chunk post = layer(overlap + kSelective + R"(["a2a_overlap_post_attn"])");
  EXPECT_TRUE(recomputed(post, "pre_mlp_layernorm"));
  EXPECT_TRUE(recomputed(post, "router"));
  EXPECT_FALSE(recomputed(post, "permutation"));
}

}  // namespace
}  // namespace trainsim
