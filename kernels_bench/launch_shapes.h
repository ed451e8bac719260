// Launch shapes of the memory-bound kernels (mem_kernels.cu), computed on the host so tests
// can check them: 16-byte vector accesses and no per-element 64-bit division.
#pragma once

#include <cstdint>

namespace trainsim::kb {

struct LaunchShape {
  unsigned grid_x = 1, grid_y = 1, block = 1;
  int vec = 1;  // elements (or 16-byte chunks for row copies) per access
};

inline constexpr unsigned kMaxGridY = 65535;

/// Row gather/reduce over `rows` rows of `row_bytes` (a multiple of 16, else Error): each
/// thread moves one 16-byte chunk; x covers the chunks of a row, y the rows (a grid-stride
/// loop over rows beyond 65535), so the kernel indexes without dividing.
[[nodiscard]] LaunchShape row_launch(int64_t rows, int64_t row_bytes);

/// Fused cross-entropy over `rows` rows of `vocab` bf16 logits: one 256-thread block per row;
/// 8 bf16 (16 bytes) per load when rows start 16-byte aligned (vocab % 8 == 0), else 1.
[[nodiscard]] LaunchShape ce_launch(int64_t rows, int64_t vocab);

}  // namespace trainsim::kb
