// The device kernels' launchers of a build without a CUDA compiler (the CUDA toolkit from PyPI's
// wheels, which have no nvcc): the host code links and is checked against that toolkit, and a
// run on a GPU stops at the first kernel with the fix.
#include "mem_kernels.h"

#include "core/error.h"

namespace trainsim::kb {
namespace {

[[noreturn]] void no_compiler() {
  throw Error("this kernels_bench was built without a CUDA compiler (toolkit " KB_CUDA_ROOT
              "), so its device kernels (data fill, L2 flush, memory-bound items) are missing; rebuild with "
              "a CUDA 12 nvcc: `make cuda12-benches CUDA12_NVCC=/path/to/cuda-12.x/bin/nvcc` (docs/kernels-bench.md)");
}

}  // namespace

void launch_fill(void*, size_t, int, uint32_t, float, cudaStream_t) { no_compiler(); }
void launch_gather_rows(const void*, void*, const int32_t*, int64_t, int64_t, cudaStream_t) { no_compiler(); }
void launch_unpermute_reduce(const void*, void*, const int32_t*, int64_t, int64_t, int64_t, cudaStream_t) {
  no_compiler();
}
void launch_make_index(int32_t*, int64_t, int64_t, cudaStream_t) { no_compiler(); }
void launch_ce_forward(const void*, const int32_t*, float*, float*, int64_t, int64_t, cudaStream_t) { no_compiler(); }
void launch_ce_backward(const void*, const int32_t*, const float*, void*, int64_t, int64_t, cudaStream_t) {
  no_compiler();
}
void launch_read_flush(const void*, size_t, unsigned*, int, cudaStream_t) { no_compiler(); }
void launch_empty(cudaStream_t) { no_compiler(); }

}  // namespace trainsim::kb
