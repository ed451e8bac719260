// NVRTC compilation of kernels_bench's device code (builds without nvcc; mem_kernels_nvrtc.cpp).
#pragma once

#include <string>
#include <vector>

namespace trainsim::kb {

/// The compiled device code: a cubin (`sass`) or PTX, and each kernel's lowered (mangled) name
/// in the order the launchers use.
struct CompiledKernels {
  std::string image;
  std::vector<std::string> names;
};

/// Compiles mem_kernels_device.cuh for sm_<arch> (`sass`) or compute_<arch>; throws Error with
/// NVRTC's log. Needs no GPU.
[[nodiscard]] CompiledKernels compile_mem_kernels(int arch, bool sass);

/// The architectures this NVRTC compiles for (e.g. 50 ... 90).
[[nodiscard]] std::vector<int> nvrtc_archs();

}  // namespace trainsim::kb
