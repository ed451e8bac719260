// NeMo 24.07's GPT-3 20B run (validation/nemo2407_h100, tp 2, sequence parallel, dp 32, fp8 with
// fp8 parameters, distributed optimizer): its model state per GPU, term by term, against a hand
// computation, and the tied embedding NeMo's GPT models use (NeMo 1.x `megatron_gpt_model.py`
// builds the model with `cfg.get('share_embeddings_and_output_weights', True)`; NeMo 2.0
// `GPTConfig.share_embeddings_and_output_weights = True`): one vocabulary matrix serves the
// embedding and the output layer, so with pp 1 the output layer holds no parameters of its own.
//
// Per tensor-parallel rank (h 6144, FFN 4h, 44 layers, RMS-style norms as the case is written):
//   Linear weights per layer: qkv h·3h/2 + proj h·h/2 + fc1 h·4h/2 + fc2 4h·h/2 = 12h²/2
//                             = 226,492,416;  × 44 = 9,965,666,304
//   norms 2h per layer (not split) + the final norm h:          44·12,288 + 6,144 = 546,816
//   embedding: vocabulary 50,257 padded to 128·tp = 50,432, half of it: 25,216·6,144 = 154,927,104
//   parameters P = 10,121,140,224
// weights   fp8 Linear weights and their cached transpose (2 B; docs/memory.md, fp8 recipes)
//           + bf16 norms and embedding: 9,965,666,304·2 + 155,473,920·2 = 20,242,280,448 B
// grads     fp32 main gradients of every parameter: 4·P = 40,484,560,896 B
// optimizer fp32 main parameter, Adam m and v over dp 32: 12·P/32 = 3,795,427,584 B
// An untied output layer would add 154,927,104 parameters: 0.92 GiB of the three terms.
#include <gtest/gtest.h>

#include <string>

#include "core/text.h"
#include "inputs/input_file.h"
#include "inputs/model_config.h"
#include "inputs/strategy_config.h"
#include "test_estimate.h"
#include "test_presets.h"

namespace trainsim {
namespace {

const std::string kCase =
    std::string(TRAINSIM_SOURCE_DIR) + "/validation/nemo2407_h100/cases/gpt3-20b_g64_tp2_pp1_dp32_mbs2_mbc4/";

TEST(NemoGpt3, TwentyBModelStateByHand) {
  const ModelConfig m = load_model(read_file(kCase + "model.json"), kCase + "model.json");
  const StrategyConfig s = load_strategy(read_file(kCase + "strategy.json"), kCase + "strategy.json");
  EXPECT_TRUE(m.tie_word_embeddings);
  const Estimate e = estimate(m, s, test::preset_system("h100-sxm-80g"));
  ASSERT_EQ(e.stages.size(), 1u);
  const StageMemory& st = e.stages[0];
  const double linear = 9965666304.0, other = 546816.0 + 154927104.0, params = linear + other;
  EXPECT_EQ(params, 10121140224.0);
  EXPECT_DOUBLE_EQ(st.weight_bytes, 2 * linear + 2 * other);
  EXPECT_DOUBLE_EQ(st.grad_bytes, 4 * params);
  EXPECT_DOUBLE_EQ(st.state_bytes, 12 * params / 32);

  // Untied, the output layer keeps its own 25,216 × 6,144 matrix: 2 + 4 + 12/32 B per parameter.
  ModelConfig untied = m;
  untied.tie_word_embeddings = false;
  const StageMemory u = estimate(untied, s, test::preset_system("h100-sxm-80g")).stages.at(0);
  const double head = 154927104.0;
  EXPECT_DOUBLE_EQ(u.weight_bytes - st.weight_bytes, 2 * head);
  EXPECT_DOUBLE_EQ(u.grad_bytes - st.grad_bytes, 4 * head);
  EXPECT_DOUBLE_EQ(u.state_bytes - st.state_bytes, 12 * head / 32);
}

}  // namespace
}  // namespace trainsim
