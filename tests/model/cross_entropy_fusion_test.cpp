// Fused cross entropy: cross_entropy_fusion_impl native | te | linear (Megatron), hand-computed on
// the head of Llama 3 8B (h 4096, vocab 128256) with s 4096, b 1, tp 1.
#include <gtest/gtest.h>

#include "plan/validate.h"
#include "core/units.h"
#include "memory/activation.h"
#include "model/graph.h"
#include "test_presets.h"

namespace trainsim {
namespace {

StrategyConfig strategy(const std::string& extra) {
  return load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 1, "world_size": 1, )" +
                           extra + "}",
                       "s.json");
}

Chunk head(const StrategyConfig& s) {
  const ModelConfig m = test::preset_model("llama3-8b");
  return build_chunk(m, s, padded_vocab_size(m.vocab_size, 1), ChunkSpec{false, true, 0, 0, 0});
}

const Leaf& leaf(const Chunk& c, const char* name) {
  for (const auto& l : c.post)
    if (l.name == name) return l;
  throw std::runtime_error(name);
}

constexpr double kT = 4096, kH = 4096, kV = 128256;

// Native fusion keeps the bf16 logits, T·V·2 = 1,050,673,152 B; the linear fusion keeps fp32 max
// and sum-exp per token, T·8 = 32,768 B. Both keep the norm's and the projection's inputs.
TEST(CrossEntropyFusion, LinearNeverKeepsTheLogits) {
  const StrategyConfig native = strategy(R"("cross_entropy_loss_fusion": true)");
  const StrategyConfig linear = strategy(R"("cross_entropy_loss_fusion": true, "cross_entropy_fusion_impl": "linear")");
  const double kept_native = walk_activations(head(native), native).cache_per_mb;
  const double kept_linear = walk_activations(head(linear), linear).cache_per_mb;
  EXPECT_DOUBLE_EQ(kept_native - kept_linear, kT * kV * 2 - kT * 8);
  EXPECT_DOUBLE_EQ(leaf(head(linear), "cross_entropy").cache, 32768);
  // te fuses the same softmax and loss: the same saved tensors as native.
  const StrategyConfig te = strategy(R"("cross_entropy_loss_fusion": true, "cross_entropy_fusion_impl": "te")");
  EXPECT_DOUBLE_EQ(walk_activations(head(te), te).cache_per_mb, kept_native);
}

// In flight: the projection holds its input (T·h·2 = 32 MiB) and one bf16 chunk of 3072 columns
// (T·3072·2 = 24 MiB); the loss one fp32 chunk (48 MiB) plus T·8 B of statistics. The forward peak
// drops from the full logits (T·V·2 = 1002 MiB at the projection) to these chunks.
TEST(CrossEntropyFusion, LinearHoldsOneVocabularyChunk) {
  const Chunk c = head(strategy(R"("cross_entropy_loss_fusion": true, "cross_entropy_fusion_impl": "linear")"));
  EXPECT_DOUBLE_EQ(leaf(c, "output_layer").fpk, kT * kH * 2 + kT * 3072 * 2);
  EXPECT_DOUBLE_EQ(leaf(c, "cross_entropy").fpk, kT * 3072 * 4 + kT * 8);
  EXPECT_DOUBLE_EQ(leaf(c, "cross_entropy").bpk, kT * 3072 * 8);
  const Chunk small = head(strategy(R"("cross_entropy_loss_fusion": true, "cross_entropy_fusion_impl": "linear",
                                       "lce_vocab_split_size": 1024)"));
  EXPECT_DOUBLE_EQ(leaf(small, "output_layer").fpk, kT * kH * 2 + kT * 1024 * 2);
}

// Time: the same forward FLOPs (2·T·h·V), keyed as one chunk's GEMM (n = 3072); backward re-runs
// the forward chunk GEMMs before dgrad: 2 × 2·T·h·V = 8.607e12 FLOP in the input-gradient phase.
TEST(CrossEntropyFusion, LinearBackwardRecomputesTheChunks) {
  const Chunk c = head(strategy(R"("cross_entropy_loss_fusion": true, "cross_entropy_fusion_impl": "linear")"));
  const Leaf& out = leaf(c, "output_layer");
  EXPECT_DOUBLE_EQ(out.kernels[kFwd][0].flops, 2 * kT * kH * kV);
  double bwd = 0;
  for (const auto& k : out.kernels[kBwdAct]) bwd += k.flops;
  EXPECT_DOUBLE_EQ(bwd, 2 * 2 * kT * kH * kV);
  EXPECT_NE(format_packed_key(out.kernels[kFwd][0].key).find("n=3072"), std::string::npos);
}

TEST(CrossEntropyFusion, SettingsThatChangeNothingAreErrors) {
  const ModelConfig m = test::preset_model("llama3-8b");
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  auto first = [&](const std::string& extra, Mode mode) {
    const auto issues = validate_plan(m, strategy(extra), sys, PlanSources{}, mode);
    return issues.empty() ? std::string("<none>") : issues[0].path + ": " + issues[0].message;
  };
  EXPECT_EQ(first(R"("cross_entropy_fusion_impl": "linear")", Mode::Default),
            "/cross_entropy_fusion_impl: 'linear' changes nothing without cross_entropy_loss_fusion; set "
            "cross_entropy_loss_fusion to true");
  EXPECT_EQ(first(R"("cross_entropy_loss_fusion": true, "lce_vocab_split_size": 1024)", Mode::Default),
            "/lce_vocab_split_size: only applies to cross_entropy_fusion_impl 'linear'");
  EXPECT_EQ(first(R"("cross_entropy_loss_fusion": true, "cross_entropy_fusion_impl": "linear")", Mode::SimuMax12),
            "/cross_entropy_fusion_impl: 'linear' is not part of SimuMax v1.2; use 'native' or the default mode");
  EXPECT_EQ(first(R"("cross_entropy_loss_fusion": true, "cross_entropy_fusion_impl": "linear")", Mode::Default),
            "<none>");
}

}  // namespace
}  // namespace trainsim
