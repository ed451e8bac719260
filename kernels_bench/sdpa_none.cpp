// Fused attention in a build without cuDNN: every attention item is recorded as unsupported.
#include "cuda_context.h"

namespace trainsim::kb {

KernelResult bench_sdpa(CudaContext&, const BenchItem&, const MeasureOptions&) {
  return unsupported_result("kernels_bench was built without cuDNN (set CUDNN_HOME and rebuild)");
}

std::string cudnn_version_string() { return ""; }

}  // namespace trainsim::kb
