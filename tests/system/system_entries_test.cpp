// The system entries a plan needs: every collective of the network groups it may pick, named
// with its JSON path, in the order of the groups and of the collectives.
#include <gtest/gtest.h>

#include <new>
#include <string_view>

#include "system/indexed_map.h"
#include "plan/validate.h"
#include "test_presets.h"

namespace trainsim {
namespace {

TEST(SystemEntriesTest, NetCollectiveIndexFollowsCollectiveOrder) {
  EXPECT_EQ(NetOps::index_of("all_reduce"), 0);
  EXPECT_EQ(NetOps::index_of("all_gather"), 1);
  EXPECT_EQ(NetOps::index_of("reduce_scatter"), 2);
  EXPECT_EQ(NetOps::index_of("p2p"), 3);
  EXPECT_EQ(NetOps::index_of("all2all"), 4);
  EXPECT_EQ(NetOps::index_of("all_reducE"), -1);
  EXPECT_EQ(NetOps::index_of(""), -1);
}

TEST(SystemEntriesTest, IndexFollowsEveryChange) {
  NetOps ops;
  ops["p2p"].scale = 3;
  ops["unknown"].scale = 4;
  ASSERT_NE(ops.known(3), nullptr);
  EXPECT_EQ(ops.known(3)->scale, 3);
  EXPECT_EQ(ops.known(0), nullptr);
  EXPECT_EQ(ops.size(), 2u);
  NetOps copy = ops;  // the copy indexes its own entries
  copy["p2p"].scale = 5;
  EXPECT_EQ(copy.known(3)->scale, 5);
  EXPECT_EQ(ops.known(3)->scale, 3);
  EXPECT_EQ(ops.erase("p2p"), 1u);
  EXPECT_EQ(ops.erase("p2p"), 0u);
  EXPECT_EQ(ops.known(3), nullptr);
  ops = copy;
  EXPECT_EQ(ops.known(3)->scale, 5);
  EXPECT_EQ(ops.at("unknown").scale, 4);
  const NetOps moved = std::move(copy);
  EXPECT_EQ(moved.known(3), &moved.at("p2p"));
  EXPECT_EQ(copy.size(), 0u);  // NOLINT(bugprone-use-after-move): the source is left empty
  EXPECT_EQ(copy.known(3), nullptr);
  copy["all2all"].scale = 6;
  EXPECT_EQ(copy.known(4)->scale, 6);
  EXPECT_EQ(copy.known(3), nullptr);
  EXPECT_THROW((void)moved.at("all2all"), std::out_of_range);
  EXPECT_THROW((void)moved.known_at(4), std::out_of_range);
  static_assert(NetOps::slot("all2all") == 4 && NetworkGroups::slot("inter_node") == 1 &&
                ComputeOps::slot("default") == 0);
}

// A value whose copy throws once `copies_left` copies have been made.
struct Fragile {
  static inline int copies_left = 1 << 30;
  int v = 0;
  Fragile() = default;
  explicit Fragile(int x) : v(x) {}
  Fragile(const Fragile& o) : v(o.v) {
    if (copies_left-- <= 0) throw std::bad_alloc();
  }
  Fragile& operator=(const Fragile&) = default;
};
constexpr std::string_view kFragileNames[] = {"a", "b", "c"};
using FragileMap = IndexedMap<Fragile, kFragileNames, 3>;

// std::map's copy assignment reuses and frees nodes as it goes: one that throws half-way must not
// leave the index pointing at freed entries or at entries of the other map.
TEST(SystemEntriesTest, FailedAssignmentLeavesMapAndIndexAsTheyWere) {
  FragileMap target;
  target["a"] = Fragile(1);
  target["c"] = Fragile(3);
  FragileMap source;
  source["a"] = Fragile(10);
  source["b"] = Fragile(20);
  source["c"] = Fragile(30);
  Fragile::copies_left = 1;  // the second entry's copy throws
  EXPECT_THROW(target = source, std::bad_alloc);
  Fragile::copies_left = 1 << 30;
  ASSERT_EQ(target.size(), 2u);
  EXPECT_EQ(target.known(0), &target.at("a"));
  EXPECT_EQ(target.known(0)->v, 1);
  EXPECT_EQ(target.known(1), nullptr);
  EXPECT_EQ(target.known(2), &target.at("c"));
  EXPECT_EQ(target.known(2)->v, 3);
  target = source;
  EXPECT_EQ(target.known(1)->v, 20);
  EXPECT_NE(target.known(1), source.known(1));
}

TEST(SystemEntriesTest, SystemCopiesIndexTheirOwnEntries) {
  SystemConfig sys = test::preset_system("h100-sxm-80g");
  const SystemConfig copy = sys;
  sys.networks.erase("inter_node");
  sys.ops["matmul"].efficient_factor = 0.25;
  ASSERT_NE(copy.networks.known(1), nullptr);
  EXPECT_EQ(copy.networks.known(1), &copy.networks.at("inter_node"));
  EXPECT_EQ(copy.networks.known(1)->ops.known(3), &copy.networks.at("inter_node").ops.at("p2p"));
  EXPECT_EQ(sys.networks.known(1), nullptr);
  EXPECT_EQ(sys.ops.known(1)->efficient_factor, 0.25);
  EXPECT_NE(copy.ops.known(1)->efficient_factor, 0.25);
}

// llama3-8b on 8 GPUs, data parallel only.
StrategyConfig dp8_strategy() {
  StrategyConfig s;
  s.seq_len = 4096;
  s.micro_batch_size = 1;
  s.micro_batch_num = 8;
  s.world_size = 8;
  return s;
}

TEST(SystemEntriesTest, MissingCollectivesAndGroupsAreNamed) {
  const ModelConfig m = test::preset_model("llama3-8b");
  const StrategyConfig s = dp8_strategy();
  SystemConfig sys = test::preset_system("h100-sxm-80g");
  ASSERT_TRUE(validate_plan(m, s, sys, {}).empty());
  sys.networks["high_intra_node"].ops.erase("p2p");
  sys.networks["high_intra_node"].ops.erase("all_reduce");
  sys.networks["high_intra_node"].ops["unknown"] = {};  // an extra entry stands for none of them
  sys.networks.erase("inter_node");
  const auto issues = validate_plan(m, s, sys, {"m", "s", "y.json"});
  ASSERT_EQ(issues.size(), 3u);
  EXPECT_EQ(issues[0].str(), "y.json: /networks/high_intra_node/op/all_reduce: required collective is missing");
  EXPECT_EQ(issues[1].str(), "y.json: /networks/high_intra_node/op/p2p: required collective is missing");
  EXPECT_EQ(issues[2].str(), "y.json: /networks/inter_node: required network group is missing");
}

// An fp8 plan still runs the output layer's GEMM in bf16: a matmul class of efficiency 0 is
// named, not replayed as an infinite time.
TEST(SystemEntriesTest, Fp8PlanStillNeedsTheMatmulClass) {
  const ModelConfig m = test::preset_model("llama3-8b");
  StrategyConfig s = dp8_strategy();
  s.fp8 = true;
  SystemConfig sys = test::preset_system("h100-sxm-80g");
  ASSERT_TRUE(validate_plan(m, s, sys, {}).empty());
  sys.ops["matmul"].efficient_factor = 0;
  const auto issues = validate_plan(m, s, sys, {"m", "s", "y.json"});
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].str(),
            "y.json: /accelerator/op/matmul/efficient_factor: is 0 but the plan uses this op; measure it or set a "
            "fallback efficiency");
}

}  // namespace
}  // namespace trainsim
