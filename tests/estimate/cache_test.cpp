// The estimate cache is exact: every field of an estimate is the same with and without it,
// across strategies that share chunks (pp, micro-batch count, ZeRO, world size) and that don't.
#include <gtest/gtest.h>

#include "test_estimate.h"
#include "estimate/estimate.h"
#include "test_presets.h"
#include "test_same_estimate.h"

namespace trainsim {
namespace {

TEST(EstimateCacheTest, SameResultsWithAndWithoutCache) {
  for (const char* name : {"llama3-8b", "mixtral-8x7b", "deepseek-v2-lite"}) {
    SCOPED_TRACE(name);
    ModelConfig m = test::preset_model(name);
    m.layer_num = 8;
    if (m.is_moe()) m.dense_layers = std::min<int64_t>(m.dense_layers, 1);
    const SystemConfig sys = test::preset_system("h100-sxm-80g");
    EstimateCache cache;
    int evaluated = 0, rebinds = 0;
    for (int64_t world : {8, 16})
      for (int64_t pp : {1, 2, 4})
        for (int64_t mbc : {4, 8})
          for (int64_t zero : {0, 1, 3})
            for (bool rc : {false, true}) {
              StrategyConfig s = load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1,
                  "micro_batch_num": 4})", "inline");
              s.world_size = world;
              s.pp_size = pp;
              s.micro_batch_num = mbc;
              s.zero_state = zero;
              s.tp_size = m.is_mla() ? 1 : 2;
              s.ep_size = m.is_moe() ? 2 : 1;
              s.recompute_granularity = rc ? std::optional<std::string>("full_block") : std::nullopt;
              s.recompute_layer_num = rc ? 1 : 0;
              test::expect_same(estimate(m, s, sys), estimate(m, s, sys, &cache));
              // A changed model is a different cache entry, never a stale one.
              ModelConfig wider = m;
              wider.hidden_size += 128;
              if (world == 8 && pp == 1 && mbc == 4 && zero == 0 && !rc) {
                test::expect_same(estimate(wider, s, sys), estimate(wider, s, sys, &cache));
                test::expect_same(estimate(m, s, sys), estimate(m, s, sys, &cache));
                ++rebinds;
              }
              ++evaluated;
            }
    EXPECT_EQ(evaluated, 72);
    // pp 1, 2, 4 give 1 + 2 + 3 distinct chunk shapes, each with and without recompute; world
    // size, micro-batch count and ZeRO never change a chunk.
    EXPECT_EQ(rebinds, 1);
    // pp 1, 2, 4 give 1 + 2 + 3 distinct chunk shapes, each with and without recompute; world
    // size, micro-batch count and ZeRO never change a chunk. The wider model rebinds the cache
    // once (one miss), and binding back to the model empties it (the rest of the 12 again).
    EXPECT_EQ(cache.misses(), 12 + 1 + 1);
  }
}

}  // namespace
}  // namespace trainsim
