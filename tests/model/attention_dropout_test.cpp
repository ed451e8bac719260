// Attention dropout on the unfused attention path (enable_dropout), hand-computed.
#include <gtest/gtest.h>

#include "core/units.h"
#include "memory/activation.h"
#include "model/graph.h"
#include "test_presets.h"

namespace trainsim {
namespace {

struct Attention {
  double fwd_bytes, bwd_bytes, layer_cache;
};

Attention attention(bool dropout, bool flash) {
  const ModelConfig m = test::preset_model("llama3-8b");
  StrategyConfig s = load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 1})", "inline");
  s.use_flash_sdp = flash;
  s.use_math_sdp = !flash;
  s.enable_dropout = dropout;
  const Chunk c = build_chunk(m, s, padded_vocab_size(m.vocab_size, 1), ChunkSpec{false, false, 1, 0, 0});
  for (const Leaf& l : c.templates[0].leaves)
    if (l.name == "core_attention")
      return {l.kernels[kFwd][0].bytes, l.kernels[kBwdAct][0].bytes, walk_activations(c, s).cache_per_mb};
  return {0, 0, 0};
}

// llama3-8b, S 4096, tp 1: P = 32 heads × 4096² × 2 B = 1024 MiB. Dropout streams P in, the
// dropped P out and a 1-byte mask (2.5 P) forward, and the gradient in and out plus the mask
// backward (2.5 P); it saves the mask and the dropped P (1.5 P = 1536 MiB).
TEST(AttentionDropoutTest, MathPathStreamsAndSavesMaskAndDroppedScores) {
  const Attention off = attention(false, false), on = attention(true, false);
  EXPECT_DOUBLE_EQ((on.fwd_bytes - off.fwd_bytes) / kMiB, 2560);
  EXPECT_DOUBLE_EQ((on.bwd_bytes - off.bwd_bytes) / kMiB, 2560);
  EXPECT_DOUBLE_EQ((on.layer_cache - off.layer_cache) / kMiB, 1536);
}

// Flash attention drops inside its kernel: nothing changes.
TEST(AttentionDropoutTest, FlashPathUnchanged) {
  const Attention off = attention(false, true), on = attention(true, true);
  EXPECT_DOUBLE_EQ(on.fwd_bytes, off.fwd_bytes);
  EXPECT_DOUBLE_EQ(on.layer_cache, off.layer_cache);
}

}  // namespace
}  // namespace trainsim
