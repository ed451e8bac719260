// Unfused SwiGLU and RMSNorm kernels, hand-computed: what PyTorch's unfused SwiGLU moves and
// saves (both modes), and SimuMax v1.2's unfused RMSNorm bytes (compat mode only).
#include <gtest/gtest.h>

#include <string>

#include "inputs/strategy_config.h"
#include "core/units.h"
#include "model/graph.h"
#include "test_presets.h"

namespace trainsim {
namespace {

struct Kernels {
  double fwd, bwd, cache;
};

Kernels leaf(const std::string& name, bool fused_swiglu, bool fused_norm, Mode mode) {
  const ModelConfig m = test::preset_model("llama3-8b");
  StrategyConfig s = load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 1})", "inline");
  s.use_fused_swiglu = fused_swiglu;
  s.use_fused_norm = fused_norm;
  ChunkEnv env;
  env.mode = mode;
  const Chunk c = build_chunk(m, s, padded_vocab_size(m.vocab_size, 1), ChunkSpec{false, false, 1, 0, 0}, env);
  for (const Leaf& l : c.templates[0]->leaves)
    if (l.name == name) return {l.kernels[kFwd][0].bytes, l.kernels[kBwdAct][0].bytes, l.cache};
  ADD_FAILURE() << "no leaf " << name;
  return {0, 0, 0};
}

// llama3-8b, S 4096, tp 1, FFN 14336: the SwiGLU output is 4096 × 14336 bf16 = 112 MiB. Fused:
// input (2 × 112) and output, 336 MiB each way, input saved (224 MiB). Unfused silu(x1) * x2:
// forward silu reads x1 and writes s, mul reads s and x2 and writes y (5 × 112 = 560 MiB);
// backward mul reads dy, x2 and s and writes ds and dx2, silu reads ds and x1 and writes dx1
// (8 × 112 = 896 MiB); x1, x2 and s are saved (336 MiB).
TEST(UnfusedKernelsTest, SwigluAsPyTorchRunsIt) {
  for (Mode mode : {Mode::Default, Mode::SimuMax12}) {
    const Kernels fused = leaf("swiglu", true, true, mode), unfused = leaf("swiglu", false, true, mode);
    EXPECT_DOUBLE_EQ(fused.fwd / kMiB, 336);
    EXPECT_DOUBLE_EQ(fused.bwd / kMiB, 336);
    EXPECT_DOUBLE_EQ(fused.cache / kMiB, 224);
    EXPECT_DOUBLE_EQ(unfused.fwd / kMiB, 560);
    EXPECT_DOUBLE_EQ(unfused.bwd / kMiB, 896);
    EXPECT_DOUBLE_EQ(unfused.cache / kMiB, 336);
  }
}

// The input norm over 4096 × 4096 elements (X = 16 Mi; the weight adds 4096 × 2 B per read).
// Fused: x in, weight, y out = 4·X + 8 KiB forward. SimuMax's unfused norm moves 26 bytes per
// element more forward and 56 more backward (fitted on its variants): +416 MiB and +896 MiB.
// The default mode keeps the fused kernel's bytes.
TEST(UnfusedKernelsTest, SimuMaxUnfusedNormBytesInCompatModeOnly) {
  const double X = 4096.0 * 4096.0;
  const Kernels fused = leaf("input_layernorm", true, true, Mode::SimuMax12);
  EXPECT_DOUBLE_EQ(fused.fwd, 4 * X + 4096 * 2);
  const Kernels compat = leaf("input_layernorm", true, false, Mode::SimuMax12);
  EXPECT_DOUBLE_EQ((compat.fwd - fused.fwd) / kMiB, 416);
  EXPECT_DOUBLE_EQ((compat.bwd - fused.bwd) / kMiB, 896);
  const Kernels megatron = leaf("input_layernorm", true, false, Mode::Default);
  const Kernels megatron_fused = leaf("input_layernorm", true, true, Mode::Default);
  EXPECT_DOUBLE_EQ(megatron.fwd, megatron_fused.fwd);
  EXPECT_DOUBLE_EQ(megatron.bwd, megatron_fused.bwd);
}

}  // namespace
}  // namespace trainsim
