// Launch shapes.
#include "launch_shapes.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace trainsim::kb {

LaunchShape row_launch(int64_t rows, int64_t row_bytes) {
  if (rows < 1 || row_bytes < 16 || row_bytes % 16 != 0)
    throw Error("row copy of " + std::to_string(rows) + " rows of " + std::to_string(row_bytes) +
                " bytes: expected rows ≥ 1 and a row size that is a positive multiple of 16 bytes");
  const int64_t chunks = row_bytes / 16;
  const int64_t block = std::min<int64_t>(256, (chunks + 31) / 32 * 32);
  LaunchShape s;
  s.block = static_cast<unsigned>(block);
  s.grid_x = static_cast<unsigned>((chunks + block - 1) / block);
  s.grid_y = static_cast<unsigned>(std::min<int64_t>(rows, kMaxGridY));
  s.vec = static_cast<int>(chunks);
  return s;
}

LaunchShape ce_launch(int64_t rows, int64_t vocab) {
  if (rows < 1 || rows > 0x7fffffff || vocab < 1)
    throw Error("cross-entropy over " + std::to_string(rows) + " rows of " + std::to_string(vocab) +
                " logits: expected 1 to 2^31-1 rows and a vocabulary ≥ 1");
  LaunchShape s;
  s.grid_x = static_cast<unsigned>(rows);
  s.block = 256;
  s.vec = vocab % 8 == 0 ? 8 : 1;
  return s;
}

}  // namespace trainsim::kb
