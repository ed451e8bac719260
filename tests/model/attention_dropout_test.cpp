// Dropout (enable_dropout), hand-computed: attention dropout on the unfused attention path, and
// the hidden dropout's bias-dropout-add kernels.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "inputs/strategy_config.h"
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
  for (const Leaf& l : c.templates[0]->leaves)
    if (l.name == "core_attention")
      return {l.kernels[kFwd][0].bytes, l.kernels[kBwdAct][0].bytes, walk_activations(c, s).cache_per_mb};
  return {0, 0, 0};
}

// llama3-8b, S 4096, tp 1: P = 32 heads × 4096² × 2 B = 1024 MiB. Dropout streams P in, the
// dropped P out and a 1-byte mask (2.5 P) forward, and the gradient in and out plus the mask
// backward (2.5 P); it saves the mask and the dropped P (1.5 P = 1536 MiB). The hidden dropout
// adds its two 1-byte masks of 4096 × 4096 (2 × 16 MiB).
TEST(AttentionDropoutTest, MathPathStreamsAndSavesMaskAndDroppedScores) {
  const Attention off = attention(false, false), on = attention(true, false);
  EXPECT_DOUBLE_EQ((on.fwd_bytes - off.fwd_bytes) / kMiB, 2560);
  EXPECT_DOUBLE_EQ((on.bwd_bytes - off.bwd_bytes) / kMiB, 2560);
  EXPECT_DOUBLE_EQ((on.layer_cache - off.layer_cache) / kMiB, 1536 + 32);
}

// Flash attention drops inside its kernel: only the hidden dropout's masks are added.
TEST(AttentionDropoutTest, FlashPathUnchanged) {
  const Attention off = attention(false, true), on = attention(true, true);
  EXPECT_DOUBLE_EQ(on.fwd_bytes, off.fwd_bytes);
  EXPECT_DOUBLE_EQ((on.layer_cache - off.layer_cache) / kMiB, 32);
}

// Hidden dropout: a bias-dropout-add after the attention projection and after the MLP, over the
// whole [B, S, H] activation (llama3-8b, S 4096, H 4096: X = 16 Mi elements, 2-byte bf16). Forward
// reads x and the residual, writes the output and the mask: 3·2 + 1 = 7 bytes per element,
// 112 MiB; backward reads the gradient and the mask and writes the input gradient: 5 bytes,
// 80 MiB. Without dropout the layer has neither.
TEST(AttentionDropoutTest, HiddenDropoutBiasDropoutAdd) {
  const ModelConfig m = test::preset_model("llama3-8b");
  StrategyConfig s = load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 1})", "inline");
  auto leaves = [&](bool dropout) {
    s.enable_dropout = dropout;
    return build_chunk(m, s, padded_vocab_size(m.vocab_size, 1), ChunkSpec{false, false, 1, 0, 0}).templates[0]->leaves;
  };
  std::vector<std::string> names;
  for (const Leaf& l : leaves(true)) {
    if (l.name != "self_attn_bda" && l.name != "mlp_bda") continue;
    names.emplace_back(l.name);
    EXPECT_DOUBLE_EQ(l.kernels[kFwd][0].bytes / kMiB, 112);
    EXPECT_DOUBLE_EQ(l.kernels[kBwdAct][0].bytes / kMiB, 80);
    EXPECT_DOUBLE_EQ(l.cache / kMiB, 16);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"self_attn_bda", "mlp_bda"}));
  for (const Leaf& l : leaves(false)) EXPECT_EQ(l.name.find("_bda"), std::string::npos) << l.name;
}

}  // namespace
}  // namespace trainsim
