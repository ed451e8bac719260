// Sticky CUDA errors.
#include "device_errors.h"

#include <algorithm>
#include <array>

namespace trainsim::kb {

bool is_sticky_cuda_error(std::string_view error_name) {
  static constexpr std::array<std::string_view, 13> kSticky = {
      "cudaErrorIllegalAddress",   "cudaErrorLaunchFailure",      "cudaErrorHardwareStackError",
      "cudaErrorIllegalInstruction", "cudaErrorMisalignedAddress", "cudaErrorInvalidAddressSpace",
      "cudaErrorInvalidPc",        "cudaErrorAssert",             "cudaErrorLaunchTimeout",
      "cudaErrorECCUncorrectable", "cudaErrorNvlinkUncorrectable", "cudaErrorContextIsDestroyed",
      "cudaErrorUnknown"};
  return std::find(kSticky.begin(), kSticky.end(), error_name) != kSticky.end();
}

}  // namespace trainsim::kb
