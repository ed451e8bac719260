// Which CUDA errors leave the context unusable ("sticky"): after one of them every later call
// fails too, so a sweep must stop instead of recording every remaining item as failed.
#pragma once

#include <string_view>

#include "core/error.h"

namespace trainsim::kb {

/// True for the cudaError_t names (cudaGetErrorName) after which the CUDA context is corrupt
/// and the process must exit: illegal address, launch failure, assert, ECC/NVLink
/// uncorrectable, ... (CUDA runtime API, enum cudaError).
[[nodiscard]] bool is_sticky_cuda_error(std::string_view error_name);

/// The device is in an unrecoverable state; the runner stops the sweep with a clear message.
class DeviceLostError : public Error {
 public:
  using Error::Error;
};

}  // namespace trainsim::kb
