// Fused attention in a build without cuDNN or cudnn-frontend: every attention item is recorded
// as unsupported.
#include "cuda_context.h"

namespace trainsim::kb {

KernelResult bench_sdpa(CudaContext&, const BenchItem&, const MeasureOptions&) {
  return unsupported_result("kernels_bench was built without cuDNN or cudnn-frontend (set CUDNN_HOME / CUDNN_FRONTEND_HOME and rebuild)");
}

std::string cudnn_version_string() { return ""; }

}  // namespace trainsim::kb

namespace trainsim::kb {

std::vector<CheckLine> self_check_sdpa(CudaContext&) {
  return {{"sdpa fwd/bwd", false,
           "not built: cudnn-frontend headers were not found (make downloads them; or set CUDNN_FRONTEND_HOME)"}};
}

}  // namespace trainsim::kb
