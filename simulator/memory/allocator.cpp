#include "memory/allocator.h"

#include <algorithm>

namespace trainsim {

double allocator_floor_bytes(double allocated_bytes, double reserved_bytes) {
  return std::min(reserved_bytes, allocated_bytes + kAllocatorLargeBufferBytes);
}

}  // namespace trainsim
