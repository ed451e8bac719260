// Launch shapes of the memory-bound kernels.
#include <gtest/gtest.h>

#include "core/error.h"
#include "launch_shapes.h"

namespace trainsim::kb {
namespace {

TEST(KbLaunchShapesTest, RowCopiesUse16ByteChunksAndA2dGrid) {
  // DeepSeek-V3 permutation: 4096 tokens x topk 8 rows of 7168 bf16 = 14336 bytes = 896 chunks.
  LaunchShape s = row_launch(4096 * 8, 7168 * 2);
  EXPECT_EQ(s.vec, 896);
  EXPECT_EQ(s.block, 256u);
  EXPECT_EQ(s.grid_x, 4u);
  EXPECT_EQ(s.grid_y, 32768u);
  // Short rows: the block shrinks to whole warps; many rows: y is capped (grid-stride loop).
  LaunchShape t = row_launch(100000, 48 * 16);
  EXPECT_EQ(t.block, 64u);
  EXPECT_EQ(t.grid_x, 1u);
  EXPECT_EQ(t.grid_y, kMaxGridY);
  EXPECT_THROW((void)row_launch(8, 20), Error);
}

TEST(KbLaunchShapesTest, CrossEntropyLoads16BytesWhenRowsAreAligned) {
  LaunchShape s = ce_launch(4096, 128256);
  EXPECT_EQ(s.vec, 8);
  EXPECT_EQ(s.grid_x, 4096u);
  EXPECT_EQ(s.block, 256u);
  EXPECT_EQ(ce_launch(4096, 32128).vec, 8);
  EXPECT_EQ(ce_launch(16, 102401).vec, 1);  // odd vocabulary: rows are not 16-byte aligned
}

}  // namespace
}  // namespace trainsim::kb
