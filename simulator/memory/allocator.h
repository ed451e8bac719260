// What of the caching allocator's reserve a run needs (default mode). PyTorch's
// CUDACachingAllocator (c10/cuda/CUDACachingAllocator.cpp, `malloc`) does not give up when
// cudaMalloc fails: it frees cached blocks to make room for the request
// (`release_available_cached_blocks`), then every cached segment that holds no live block
// (`release_cached_blocks`), and retries (counted in `num_alloc_retries`; each release is a
// cudaFree, which synchronises the device). So the measured `max_memory_reserved()` is what the
// allocator kept because nothing pressed it, not what the run needs: the run needs the allocated
// bytes, the free space stranded in segments that still hold live blocks, and the segment of the
// request that failed.
#pragma once

namespace trainsim {

/// kLargeBuffer: the segment the allocator cudaMallocs for a request of more than kSmallSize
/// (1 MiB) and less than kMinLargeAlloc (10 MiB); a request of 10 MiB or more gets a segment
/// rounded up to kRoundLarge (2 MiB), one of 1 MiB or less a kSmallBuffer (2 MiB) segment
/// [c10/cuda/CUDACachingAllocator.cpp, `get_allocation_size`]. So one request's segment exceeds
/// the request by less than 20 MiB.
inline constexpr double kAllocatorLargeBufferBytes = 20.0 * 1024 * 1024;

/// The least the caching allocator must hold at a peak of `allocated_bytes` when it frees its
/// cache before reporting out of memory: the allocated bytes plus one kLargeBuffer segment (the
/// failing request's rounding), and no fragmentation — no source gives the share of the reserve
/// stranded in segments that still hold live blocks, so this is a lower bound. With
/// `expandable_segments:True` the release also unmaps the free pages (2 MiB small, 20 MiB large)
/// of segments that hold live blocks, so the bound is closer there. Never more than
/// `reserved_bytes`, the reserve the plan is predicted to hold without pressure.
[[nodiscard]] double allocator_floor_bytes(double allocated_bytes, double reserved_bytes);

}  // namespace trainsim
