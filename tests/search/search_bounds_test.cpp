// Search bounds: the candidate space is capped and enumerated lazily, and micro-batch counts
// derived from the global batch respect the plan bounds.
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/units.h"
#include "search/search.h"
#include "test_presets.h"

namespace trainsim {
namespace {

// Before: micro_batch_num = global_batch / (dp·mbs) had no limit, so a huge global batch made
// replay allocate without bound; now such layouts are rejected by the plan bound.
TEST(SearchBoundsTest, DerivedMicroBatchCountIsBounded) {
  const ModelConfig m = test::preset_model("llama3-8b");
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  SearchSpace space;
  space.tp = {8};
  space.pp = {4};
  space.mbs = {1};
  space.vpp = {1};
  space.zero = {1};
  space.splits = {PipelineSplit::Even};
  space.recompute = {RecomputeKind::None};
  SearchOptions o;
  o.world_size = 32;                       // dp 1
  o.global_batch = int64_t{1} << 30;       // mbc 2^30: pp·mbc far above 2^20
  o.threads = 1;
  const SearchResult r = search(m, sys, space, o);
  EXPECT_EQ(r.evaluated, 1);
  EXPECT_EQ(r.feasible, 0);
  EXPECT_EQ(r.estimate_calls, 0);
  EXPECT_EQ(r.rejected_by_reason.at("illegal_micro_batch_num"), 1);
}

// Before: the full layout product was materialised (bad_alloc on large clusters).
TEST(SearchBoundsTest, CandidateSpaceIsCapped) {
  const ModelConfig m = test::preset_model("llama3-8b");
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  SearchSpace space;
  for (int64_t v = 1; v <= 64; ++v) space.tp.push_back(v);
  for (int64_t v = 1; v <= 64; ++v) space.cp.push_back(v);
  for (int64_t v = 1; v <= 32; ++v) space.pp.push_back(v);
  for (int64_t v = 1; v <= 64; ++v) space.mbs.push_back(v);
  SearchOptions o;
  o.world_size = 1 << 20;
  o.global_batch = 1 << 20;
  try {
    (void)search(m, sys, space, o);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "search: /space: more than 16777216 candidates; give fewer values to --tp, --pp, --cp, "
                           "--ep, --etp, --vpp, --mbs, --zero or --recompute");
  }
  // Keeping every feasible candidate is limited to spaces that fit in memory.
  space.tp = {1, 2, 4, 8};
  space.cp = {1, 2, 4, 8};
  o.keep = 0;
  try {
    (void)search(m, sys, space, o);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "search: /keep: keeping all of 11141120 candidates; at most 65536 can be kept");
  }
}

}  // namespace
}  // namespace trainsim
