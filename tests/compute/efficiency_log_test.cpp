// The efficiency miss log: each (op, key) once, in the order first met, across merges and past
// the growth of its index.
#include <gtest/gtest.h>

#include "compute/cost.h"

namespace trainsim {
namespace {

PackedKey key(double m) { return matmul_key(1, m, 4096, 4096, KeyLayout::TN, false, KeyDtype::bf16); }

TEST(EfficiencyLogTest, RecordsEachOpAndKeyOnceInOrder) {
  EfficiencyLog log;
  log.miss(OpClass::Matmul, key(1), PackedKeyHash{}(key(1)), 10, 0.5);
  log.miss(OpClass::Fp8Matmul, key(1), PackedKeyHash{}(key(1)), 20, 0.6);  // same key, other op: a miss of its own
  log.miss(OpClass::Matmul, key(2), PackedKeyHash{}(key(2)), 30, 0.7);
  log.miss(OpClass::Matmul, key(1), PackedKeyHash{}(key(1)), 40, 0.8);  // repeat: the first record stays
  log.miss(OpClass::Matmul, key(2), PackedKeyHash{}(key(2)), 50, 0.9);  // repeat
  ASSERT_EQ(log.misses.size(), 3u);
  EXPECT_EQ(log.misses[0].op, OpClass::Matmul);
  EXPECT_EQ(log.misses[0].key, key(1));
  EXPECT_EQ(log.misses[0].flops, 10);
  EXPECT_EQ(log.misses[0].used_efficiency, 0.5);
  EXPECT_EQ(log.misses[1].op, OpClass::Fp8Matmul);
  EXPECT_EQ(log.misses[1].flops, 20);
  EXPECT_EQ(log.misses[2].key, key(2));
  EXPECT_EQ(log.misses[2].flops, 30);
  EXPECT_EQ(log.hits, 0);
}

TEST(EfficiencyLogTest, MergeAddsHitsAndNewMissesAfterItsOwn) {
  EfficiencyLog a, b;
  a.hits = 3;
  a.miss(OpClass::Matmul, key(1), PackedKeyHash{}(key(1)), 1, 0.5);
  a.miss(OpClass::Matmul, key(2), PackedKeyHash{}(key(2)), 2, 0.5);
  b.hits = 4;
  b.miss(OpClass::Matmul, key(3), PackedKeyHash{}(key(3)), 3, 0.5);
  b.miss(OpClass::Matmul, key(2), PackedKeyHash{}(key(2)), 20, 0.5);
  b.miss(OpClass::SdpFwd, key(1), PackedKeyHash{}(key(1)), 4, 0.5);
  a.merge(b);
  a.merge(b);  // a second merge adds the hits again, no misses
  EXPECT_EQ(a.hits, 3 + 4 + 4);
  ASSERT_EQ(a.misses.size(), 4u);
  const double flops[] = {1, 2, 3, 4};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(a.misses[i].flops, flops[i]) << i;
  EXPECT_EQ(a.misses[3].op, OpClass::SdpFwd);
  EXPECT_EQ(a.misses[3].key, key(1));
}

TEST(EfficiencyLogTest, KeepsOrderAndDedupPastItsIndexGrowth) {
  // 100 distinct keys grow the index several times; each is then missed again.
  EfficiencyLog log;
  for (int i = 0; i < 100; ++i) log.miss(OpClass::Matmul, key(i), PackedKeyHash{}(key(i)), i, 0.5);
  for (int i = 99; i >= 0; --i) log.miss(OpClass::Matmul, key(i), PackedKeyHash{}(key(i)), -1, 0.5);
  ASSERT_EQ(log.misses.size(), 100u);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(log.misses[static_cast<size_t>(i)].key, key(i)) << i;
    EXPECT_EQ(log.misses[static_cast<size_t>(i)].flops, i) << i;
  }
  EfficiencyLog copy;
  copy.merge(log);
  copy.merge(log);
  EXPECT_EQ(copy.misses.size(), 100u);
  EXPECT_EQ(copy.misses[57].key, key(57));
  copy.miss(OpClass::Matmul, key(57), PackedKeyHash{}(key(57)), -1, 0.5);
  copy.miss(OpClass::Matmul, key(100), PackedKeyHash{}(key(100)), 100, 0.5);
  ASSERT_EQ(copy.misses.size(), 101u);
  EXPECT_EQ(copy.misses[100].key, key(100));
  EXPECT_EQ(copy.misses[57].flops, 57);
}

}  // namespace
}  // namespace trainsim
