// Activation bookkeeping of one layer, hand-computed.
#include "inputs/strategy_config.h"
#include "memory/activation.h"

#include <gtest/gtest.h>

#include "core/units.h"
#include "model/graph.h"
#include "test_presets.h"

namespace trainsim {
namespace {

double layer_cache_mib(bool flash) {
  ModelConfig m = test::preset_model("llama3-8b");
  StrategyConfig s = load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 1})", "inline");
  s.use_flash_sdp = flash;
  s.use_math_sdp = !flash;
  const Chunk c = build_chunk(m, s, padded_vocab_size(m.vocab_size, 1), ChunkSpec{false, false, 1, 0, 0});
  return walk_activations(c, s).cache_per_mb / kMiB;
}

// The peer's per-layer example (llama3-8b, tp 1, S 4096, flash): LN 32 + QKV input 32 +
// attention q 32, k 8, v 8, lse 0.25 + out-proj input 32 + LN 32 + fc1 input 32 + SwiGLU 224 +
// fc2 input 112 = 544.25 MiB.
TEST(ActivationTest, FlashLayerCacheMatchesPeerExample) { EXPECT_DOUBLE_EQ(layer_cache_mib(true), 544.25); }

// Unfused attention saves the score matrix instead of lse: 32 heads × 4096² × 2 B = 1024 MiB.
TEST(ActivationTest, MathAttentionSavesScores) { EXPECT_DOUBLE_EQ(layer_cache_mib(false), 544.25 - 0.25 + 1024); }

}  // namespace
}  // namespace trainsim
