// The driver check of kernels_bench and comm_bench: a binary built with CUDA X.Y needs a driver
// for CUDA X.Y or later (cudaDriverGetVersion against CUDART_VERSION, CUDA Programming Guide,
// "Versioning and Compatibility"); older drivers get a message that names both versions and the
// build that fits them. The version arithmetic lives here (no CUDA needed, tested on CPU).
#pragma once

#include <string>

namespace trainsim {

/// The oldest CUDA the CUDA 12 build of the benches is made with (`make cuda12-benches`, the
/// wheels pinned in tools/cuda12/toolkit.sh), in CUDA's encoding.
inline constexpr int kCuda12BenchVersion = 12040;

/// CUDA's version integer (1000·major + 10·minor, as CUDART_VERSION and cudaDriverGetVersion
/// give it) as text: 13000 -> "13.0", 12040 -> "12.4".
[[nodiscard]] std::string cuda_version_text(int version);

/// What stops `bench`, built with CUDA `built_for`, from running on a driver that supports CUDA
/// `driver` (0: no driver loaded); "" when the driver is new enough.
[[nodiscard]] std::string cuda_driver_problem(const std::string& bench, int built_for, int driver);

/// Throws trainsim::Error with cuda_driver_problem's text when there is one (exit code 1).
void require_cuda_driver(const std::string& bench, int built_for, int driver);

}  // namespace trainsim
