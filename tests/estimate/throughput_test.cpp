// Megatron-LM's FLOP count and MFU, checked against hand computations.
#include "estimate/throughput.h"

#include <gtest/gtest.h>

#include "system/presets.h"
#include "core/error.h"

namespace trainsim {
namespace {

ModelConfig preset_model(const char* name) {
  const ConfigText t = resolve_config("model", name);
  return load_model(t.text, t.source);
}

TEST(Throughput, MegatronFlopsLlama3_8B) {
  // Per token: MLP 12·h·f·1.5·L = 33,822,867,456; attention 12·L·h²·(1 + g/a + s/(2h)) =
  // 11,274,289,152 (causal: half of the s/h term); logits 6·h·V = 3,152,019,456.
  StrategyConfig s;
  s.seq_len = 4096;
  const double per_token = 33822867456.0 + 11274289152.0 + 3152019456.0;
  EXPECT_DOUBLE_EQ(megatron_step_flops(preset_model("llama3-8b"), s, 128256, 1), 4096 * per_token);
  EXPECT_DOUBLE_EQ(megatron_step_flops(preset_model("llama3-8b"), s, 128256, 32), 32 * 4096 * per_token);
}

TEST(Throughput, MegatronFlopsMoeCountsTopkExperts) {
  // Mixtral 8x7B, s 4096: MLP 12·h·(f·topk·1.5)·L = 67,645,734,912; attention as Llama 3 8B
  // (same shape) 11,274,289,152; logits 6·4096·32000 = 786,432,000.
  StrategyConfig s;
  s.seq_len = 4096;
  EXPECT_DOUBLE_EQ(megatron_step_flops(preset_model("mixtral-8x7b"), s, 32000, 1),
                   4096 * (67645734912.0 + 11274289152.0 + 786432000.0));
}

TEST(Throughput, MfuFromTheEstimate) {
  ModelConfig m = preset_model("llama3-8b");
  StrategyConfig s;
  s.seq_len = 4096;
  s.world_size = 8;
  SystemConfig sys;
  sys.ops["default"].peak_flops = 1000e12;
  Estimate e;
  e.iteration_time_s = 2;
  e.padded_vocab = 128256;
  e.global_batch_size = 16;
  const Throughput t = megatron_throughput(m, s, sys, e);
  const double flops = 16 * 4096 * (33822867456.0 + 11274289152.0 + 3152019456.0);
  EXPECT_DOUBLE_EQ(t.tflops_per_gpu, flops / 2 / 8 / 1e12);
  EXPECT_DOUBLE_EQ(t.mfu, t.tflops_per_gpu / 1000);
}

TEST(Throughput, ConventionNames) {
  EXPECT_EQ(parse_mfu_convention("simumax", "--mfu"), MfuConvention::SimuMax);
  try {
    (void)parse_mfu_convention("megatorn", "--mfu");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--mfu: unknown convention 'megatorn'; valid values: megatron, simumax; did you mean 'megatron'?");
  }
}

}  // namespace
}  // namespace trainsim
