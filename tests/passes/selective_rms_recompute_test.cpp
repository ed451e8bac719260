// SimuMax v1.2's selective recompute with the norm flags (compat mode), against its spec
// (parse_attention_recompute / parse_mlp_recompute): attn_recompute re-runs QKV, rope and core
// attention; mla_rms_recompute adds the input norm (and MLA's q/kv down projections);
// mlp_recompute re-runs fc1, the activation and fc2; mlp_rms_recompute adds the pre-MLP norm (and
// a MoE layer's router and shared expert). A segment keeps only its first leaf's input.
//
// One dense layer: h 1024, 8 heads of 128, SwiGLU FFN 4096, sequence 2048, micro-batch 1, tp 1,
// bf16, so a T·h·2 tensor is 2048·1024·2 B = 4 MiB.
// - attn + mlp: input norm's input 4, QKV segment's input (the norm output) 4, projection's input
//   4, pre-MLP norm's input 4, MLP segment's input (fc1's input) 4 = 20 MiB.
// - attn + mla_rms + mlp + mlp_rms: the attention segment starts at the input norm (its input,
//   4), the projection's input 4, the MLP segment starts at the pre-MLP norm (its input, 4) = 12 MiB.
// - attn + mla_rms only: 4 + 4 + the MLP as without recompute (pre-MLP norm 4, fc1's input 4,
//   SwiGLU's input T·8192·2 = 32, fc2's input T·4096·2 = 16) = 64 MiB.
// - mlp + mlp_rms only: the attention as without recompute (input norm's input 4, QKV's input 4,
//   q k v 12, lse 8 heads·2048·2 B = 1/32 (the peer's 2 bytes), projection's input 4) + the MLP
//   segment's input (the pre-MLP norm's input, 4) = 28 + 1/32 MiB.
#include <gtest/gtest.h>

#include "core/units.h"
#include "memory/activation.h"
#include "model/graph.h"
#include "plan/plan.h"
#include "test_presets.h"

namespace trainsim {
namespace {

const char* kDense = R"({"model_type": "dense", "model_name": "llama_small", "hidden_size": 1024, "head_num": 8,
                         "kv_head_num": 8, "head_size": 128, "intermediate_size": 4096, "layer_num": 1,
                         "vocab_size": 1024, "use_swiglu": true})";
const char* kMoe = R"({"model_type": "moe", "model_name": "moe_small", "hidden_size": 1024, "head_num": 8,
                       "kv_head_num": 8, "head_size": 128, "intermediate_size": 4096, "moe_ffn_hidden_size": 512,
                       "moe_shared_expert_intermediate_size": 1024, "layer_num": 1, "dense_layers": 0,
                       "expert_num": 4, "topk": 2, "vocab_size": 1024, "use_swiglu": true})";
const char* kMla = R"({"model_type": "dense", "model_name": "mla_small", "attention_type": "mla", "hidden_size": 1024,
                       "head_num": 8, "kv_head_num": 8, "head_size": 128, "intermediate_size": 4096,
                       "qk_head_dim": 128, "qk_pos_emb_head_dim": 64, "v_head_dim": 128, "q_lora_rank": 768,
                       "kv_lora_rank": 512, "layer_num": 1, "vocab_size": 1024, "use_swiglu": true})";

double layer_cache_mib(const std::string& flags, const char* model = kDense) {
  const ModelConfig m = load_model(model, "model.json");
  const StrategyConfig s = load_strategy(
      R"({"seq_len": 2048, "micro_batch_size": 1, "micro_batch_num": 1, "world_size": 1, "enable_recompute": true,
          "recompute_granularity": "selective_recompute", "recompute_layer_num": 1, )" +
          flags + "}",
      "s.json");
  const Plan plan = resolve_plan(m, s, test::preset_system("a100-pcie-80g"), Mode::SimuMax12);
  ChunkSpec spec = plan.chunks[0][0];
  spec.embedding = spec.head = false;
  const ChunkEnv env{.mode = Mode::SimuMax12};
  return walk_activations(build_chunk(m, s, plan.padded_vocab, spec, env), s).cache_per_mb / kMiB;
}

TEST(SelectiveRmsRecompute, NormFlagsMoveTheCheckpointToTheNormInput) {
  EXPECT_DOUBLE_EQ(layer_cache_mib(R"("attn_recompute": true, "mlp_recompute": true)"), 20);
  EXPECT_DOUBLE_EQ(layer_cache_mib(R"("attn_recompute": true, "mla_rms_recompute": true, "mlp_recompute": true,
                                      "mlp_rms_recompute": true)"),
                   12);
  EXPECT_DOUBLE_EQ(layer_cache_mib(R"("attn_recompute": true, "mla_rms_recompute": true)"), 64);
  EXPECT_DOUBLE_EQ(layer_cache_mib(R"("mlp_recompute": true, "mlp_rms_recompute": true)"), 4 + 4 + 12 + 1.0 / 32 + 4 + 4);
}

// A MoE layer with a shared expert (FFN 1024): mlp_rms_recompute also re-runs the pre-MLP norm, the
// shared expert and the router, which the peer builds as norm, shared fc1 / SwiGLU / fc2, router:
// one segment on the norm's input (4 MiB, as the norm kept before). What goes: the router's input
// T·h·2 = 4, the shared SwiGLU's input T·2048·2 = 8 and the shared fc2's input T·1024·2 = 4 MiB
// (the shared fc1 reads the router's copy and kept nothing) = 16 MiB per layer.
TEST(SelectiveRmsRecompute, MoeNormFlagAlsoRecomputesRouterAndSharedExpert) {
  EXPECT_DOUBLE_EQ(layer_cache_mib(R"("attn_recompute": true, "mlp_recompute": true)", kMoe) -
                       layer_cache_mib(R"("attn_recompute": true, "mlp_recompute": true, "mlp_rms_recompute": true)",
                                       kMoe),
                   16);
}

// MLA (q_lora_rank 768), leaves in the peer's order: input norm, q_down, kv_down, q norm, q_up,
// kv norm, kv_up, rope, core attention. attn_recompute alone re-runs q norm .. core attention as
// one segment on the q norm's input (q_down's output, T·768·2 = 3 MiB) while the input norm, q_down
// and kv_down keep their inputs (3 × T·h·2 = 12 MiB). With mla_rms_recompute the segment starts at
// the input norm and keeps only its input (4 MiB): 15 − 4 = 11 MiB less per layer.
TEST(SelectiveRmsRecompute, MlaNormFlagAlsoRecomputesTheDownProjections) {
  EXPECT_DOUBLE_EQ(layer_cache_mib(R"("attn_recompute": true)", kMla) -
                       layer_cache_mib(R"("attn_recompute": true, "mla_rms_recompute": true)", kMla),
                   11);
}

}  // namespace
}  // namespace trainsim
