// Checks, without a GPU, that NVRTC compiles kernels_bench's device code for sm_80 and sm_90
// (run by `make cuda12-benches`); exit code 1 with NVRTC's log otherwise.
#include <cstdio>
#include <exception>

#include <nvrtc.h>

#include "mem_kernels_nvrtc.h"

int main() {
  try {
    int major = 0, minor = 0;
    nvrtcVersion(&major, &minor);
    std::printf("NVRTC %d.%d compiles kernels_bench's device code:", major, minor);
    for (int arch : {80, 90}) {
      const trainsim::kb::CompiledKernels c = trainsim::kb::compile_mem_kernels(arch, true);
      std::printf(" sm_%d (%zu kernels, %zu bytes)", arch, c.names.size(), c.image.size());
    }
    std::printf("\n");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nmem_kernels_nvrtc_check: %s\n", e.what());
    return 1;
  }
}
