// Structural properties of the estimate that must hold for any plan.
#include <gtest/gtest.h>

#include "test_estimate.h"
#include "system/presets.h"
#include "test_presets.h"
#include "estimate/estimate.h"

namespace trainsim {
namespace {

using test::preset_model;
using test::preset_system;

StrategyConfig base_strategy() {
  return load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 8,
      "world_size": 8, "tp_size": 2, "pp_size": 2, "enable_recompute": true})", "inline");
}

struct Plan {
  const char* model;
  const char* system;
  int64_t layers;
  int64_t tp, pp, ep;
};

const Plan kPlans[] = {
    {"llama3-8b", "h100-sxm-80g", 8, 2, 2, 1},
    {"qwen3-32b", "a100-pcie-simumax", 8, 4, 2, 1},
    {"mixtral-8x7b", "b200-simumax", 4, 1, 2, 4},
    {"deepseek-v2-lite", "h100-sxm-80g", 4, 1, 2, 4},
};

class PropertyTest : public ::testing::TestWithParam<Plan> {
 protected:
  void SetUp() override {
    model_ = preset_model(GetParam().model);
    model_.layer_num = GetParam().layers;
    if (model_.is_moe()) model_.dense_layers = std::min<int64_t>(model_.dense_layers, 1);
    sys_ = preset_system(GetParam().system);
    s_ = base_strategy();
    s_.tp_size = GetParam().tp;
    s_.pp_size = GetParam().pp;
    s_.ep_size = GetParam().ep;
  }
  ModelConfig model_;
  SystemConfig sys_;
  StrategyConfig s_;
};

TEST_P(PropertyTest, MemoryNonDecreasingInMicroBatchSize) {
  double prev = 0;
  for (int64_t mbs : {1, 2, 4}) {
    StrategyConfig s = s_;
    s.micro_batch_size = mbs;
    const Estimate e = estimate(model_, s, sys_);
    EXPECT_GE(e.peak_alloc_bytes(), prev) << "mbs " << mbs;
    prev = e.peak_alloc_bytes();
  }
}

// Two chains of growing recompute: by granularity on every layer (none, selective attention,
// selective attention+MLP, full block), and full-block recompute over more and more layers.
TEST_P(PropertyTest, MoreRecomputeNeverRaisesPeakMemory) {
  auto non_increasing = [&](const std::vector<StrategyConfig>& chain, const char* what) {
    double prev = estimate(model_, chain[0], sys_).peak_alloc_bytes();
    for (size_t i = 1; i < chain.size(); ++i) {
      const double peak = estimate(model_, chain[i], sys_).peak_alloc_bytes();
      EXPECT_LE(peak, prev * (1 + 1e-12)) << what << " step " << i;
      prev = peak;
    }
  };
  const int64_t all = model_.layer_num;
  StrategyConfig attn = s_;
  attn.recompute_granularity = "selective_recompute";
  attn.attn_recompute = true;
  attn.recompute_layer_num = all;
  StrategyConfig both = attn;
  both.mlp_recompute = true;
  StrategyConfig full = s_;
  full.recompute_granularity = "full_block";
  full.recompute_layer_num = all;
  non_increasing({s_, attn, both, full}, "granularity");
  std::vector<StrategyConfig> layers{s_};
  for (int64_t k = 1; k <= all / s_.pp_size; ++k) {
    full.recompute_layer_num = k;
    layers.push_back(full);
  }
  non_increasing(layers, "full-block layers");
}

TEST_P(PropertyTest, DoublingDpAtFixedGlobalBatchHalvesComputeTime) {
  StrategyConfig s = s_;
  s.micro_batch_num = 16;
  const Estimate a = estimate(model_, s, sys_);
  s.world_size *= 2;
  s.micro_batch_num /= 2;
  const Estimate b = estimate(model_, s, sys_);
  ASSERT_EQ(a.global_batch_size, b.global_batch_size);
  for (size_t i = 0; i < a.stage_times.size(); ++i) {
    const double ca = a.stage_times[i].fwd_compute_s + a.stage_times[i].bwd_compute_s;
    const double cb = b.stage_times[i].fwd_compute_s + b.stage_times[i].bwd_compute_s;
    // Half the micro-batches per rank: compute per stage halves exactly.
    EXPECT_DOUBLE_EQ(cb, ca / 2) << a.stage_times[i].name;
  }
}

INSTANTIATE_TEST_SUITE_P(Plans, PropertyTest, ::testing::ValuesIn(kPlans),
                         [](const auto& param_info) {
                           std::string n = param_info.param.model;
                           for (char& c : n)
                             if (c == '-' || c == '.') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace trainsim
