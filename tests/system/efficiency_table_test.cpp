// EfficiencyTable: packed keys found by value (with or without a hash computed beforehand),
// updated in place, kept through the index's growth; texts no packed key prints kept as text.
#include <gtest/gtest.h>

#include <string>

#include "system/system_config.h"

namespace trainsim {
namespace {

std::string text(int m) {
  return "b=1, m=" + std::to_string(m) + ", k=4096, n=6144, layout=TN, accumulate=False, out_dtype=bf16";
}

PackedKey key(int m) { return matmul_key(1, m, 4096, 6144, KeyLayout::TN, false, KeyDtype::bf16); }

TEST(EfficiencyTableTest, FindsEveryKeyThroughGrowth) {
  EfficiencyTable t;
  for (int m = 1; m <= 100; ++m) t.set(text(m), m / 1000.0);
  ASSERT_EQ(t.size(), 100u);
  for (int m = 1; m <= 100; ++m) {
    const double* e = t.find(key(m), PackedKeyHash{}(key(m)));
    ASSERT_NE(e, nullptr) << m;
    EXPECT_EQ(*e, m / 1000.0);
    EXPECT_EQ(t.find(key(m)), e);
    EXPECT_EQ(t.at(text(m)), m / 1000.0);
  }
  EXPECT_EQ(t.find(key(101)), nullptr);
  EXPECT_EQ(t.find(matmul_key(1, 1, 4096, 6144, KeyLayout::NN, false, KeyDtype::bf16)), nullptr);
}

TEST(EfficiencyTableTest, SettingAKeyAgainReplacesItsEfficiency) {
  EfficiencyTable t;
  t.set(text(7), 0.5);
  t.set(text(7), 0.75);
  EXPECT_EQ(t.size(), 1u);
  ASSERT_NE(t.find(key(7)), nullptr);
  EXPECT_EQ(*t.find(key(7)), 0.75);
  const auto entries = t.entries();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].first, text(7));
  EXPECT_EQ(entries[0].second, 0.75);
}

TEST(EfficiencyTableTest, EmptyTableAndTextKeys) {
  EfficiencyTable t;
  EXPECT_EQ(t.find(key(1)), nullptr);
  t.set("not a key", 0.25);
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.at("not a key"), 0.25);
  EXPECT_EQ(t.find(key(1)), nullptr);
}

}  // namespace
}  // namespace trainsim
