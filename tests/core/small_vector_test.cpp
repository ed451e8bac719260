// SmallVector's 32-bit sizes: a size they cannot hold is refused, not silently wrapped.
#include <gtest/gtest.h>

#include <cstddef>
#include <stdexcept>

#include "core/small_vector.h"

namespace trainsim {
namespace {

TEST(SmallVector, RefusesMoreElementsThanItsSizeHolds) {
  SmallVector<char, 4> v;
  EXPECT_THROW(v.assign(size_t{1} << 32, 'x'), std::length_error);
  v.assign(3, 'y');
  EXPECT_EQ(v.size(), 3u);
}

}  // namespace
}  // namespace trainsim
