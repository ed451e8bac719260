// Schedule programs: the per-rank step orders of 1F1B, interleaved 1F1B and ZB-H1.
#include "schedule/program.h"

#include <gtest/gtest.h>

#include <string>

namespace trainsim {
namespace {

// "F0 B0 W0" for chunk 0, "F0.1" for micro-batch 0 on chunk 1.
std::string show(const std::vector<Step>& steps, bool chunks) {
  std::string out;
  for (const Step& s : steps) {
    if (!out.empty()) out += ' ';
    out += s.pass == Pass::Forward ? 'F' : s.pass == Pass::Backward ? 'B' : 'W';
    out += std::to_string(s.mb);
    if (chunks) out += "." + std::to_string(s.chunk);
  }
  return out;
}

TEST(ProgramTest, OneFOneBWarmsUpPpMinusRankMinusOneForwards) {
  const Program p = one_f_one_b(2, 3);
  EXPECT_EQ(show(p.ranks[0], false), "F0 F1 B0 F2 B1 B2");
  EXPECT_EQ(show(p.ranks[1], false), "F0 B0 F1 B1 F2 B2");
}

TEST(ProgramTest, OneFOneBWithFewerMicroBatchesThanStages) {
  const Program p = one_f_one_b(4, 2);
  EXPECT_EQ(show(p.ranks[0], false), "F0 F1 B0 B1");
  EXPECT_EQ(show(p.ranks[3], false), "F0 B0 F1 B1");
}

// pp 2, v 2, 4 micro-batches in groups of 2: table (0,0)(1,0)(0,1)(1,1)(2,0)(3,0)(2,1)(3,1);
// rank 0 warms up (2−0−1)·2 + (2−1)·2 = 4 steps, rank 1 two; backward k runs chunk v−1−chunk.
TEST(ProgramTest, InterleavedFollowsMegatronsTable) {
  const Program p = interleaved(2, 2, 4, 2);
  EXPECT_EQ(show(p.ranks[0], true), "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0");
  EXPECT_EQ(show(p.ranks[1], true), "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 B3.0");
}

TEST(ProgramTest, InterleavedPartialLastGroup) {
  // 5 micro-batches in groups of 4: the last group holds micro-batch 4 alone, on both chunks.
  const auto t = interleaved_table(2, 5, 4);
  ASSERT_EQ(t.size(), 10u);
  EXPECT_EQ(t[8].mb, 4);
  EXPECT_EQ(t[8].chunk, 0);
  EXPECT_EQ(t[9].mb, 4);
  EXPECT_EQ(t[9].chunk, 1);
  const Program p = interleaved(4, 2, 5, 4);
  for (const auto& r : p.ranks) EXPECT_EQ(r.size(), 20u);
}

// ZB-H1: rank r defers each weight-gradient pass by r micro-batches.
TEST(ProgramTest, ZeroBubbleH1DefersWeightGradients) {
  const Program p = zero_bubble_h1(2, 2);
  EXPECT_TRUE(p.split_backward);
  EXPECT_EQ(show(p.ranks[0], false), "F0 F1 B0 W0 B1 W1");
  EXPECT_EQ(show(p.ranks[1], false), "F0 B0 F1 B1 W0 W1");
}

// A program rebuilt in place holds only the new schedule: its shape, flags and steps.
TEST(ProgramTest, BuildingIntoAProgramReplacesIt) {
  Program p;
  zero_bubble_h1(3, 4, p);
  interleaved(2, 2, 2, 2, false, p);
  EXPECT_EQ(p.ranks.size(), 2u);
  EXPECT_EQ(p.v, 2);
  EXPECT_EQ(p.group, 2);
  EXPECT_FALSE(p.split_backward);
  EXPECT_EQ(show(p.ranks[1], true), show(interleaved(2, 2, 2, 2).ranks[1], true));
  one_f_one_b(2, 3, p);
  EXPECT_EQ(p.group, 1);
  EXPECT_EQ(p.v, 1);
  EXPECT_EQ(show(p.ranks[0], false), "F0 F1 B0 F2 B1 B2");
  EXPECT_EQ(show(p.ranks[1], false), "F0 B0 F1 B1 F2 B2");
}

}  // namespace
}  // namespace trainsim
