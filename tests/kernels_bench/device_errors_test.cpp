// Sticky CUDA errors end a sweep; recoverable ones do not.
#include <gtest/gtest.h>

#include "device_errors.h"

namespace trainsim::kb {
namespace {

TEST(KbDeviceErrorsTest, StickyErrorsAreTheContextCorruptingOnes) {
  EXPECT_TRUE(is_sticky_cuda_error("cudaErrorIllegalAddress"));
  EXPECT_TRUE(is_sticky_cuda_error("cudaErrorLaunchFailure"));
  EXPECT_TRUE(is_sticky_cuda_error("cudaErrorECCUncorrectable"));
  EXPECT_FALSE(is_sticky_cuda_error("cudaErrorMemoryAllocation"));  // out of memory: next item may fit
  EXPECT_FALSE(is_sticky_cuda_error("cudaErrorInvalidValue"));
  EXPECT_FALSE(is_sticky_cuda_error(""));
}

}  // namespace
}  // namespace trainsim::kb
