// Device backend of a build without CUDA: only --dry-run works.
#include "backend.h"
#include "core/error.h"
#include "memory_probe.h"

namespace trainsim::kb {

std::unique_ptr<Backend> make_device_backend() {
  throw Error("this kernels_bench was built without CUDA, so only --dry-run works; rebuild where the CUDA "
              "toolkit is found (cmake -DTRAINSIM_WITH_CUDA=ON)");
}

MemoryProbe run_memory_probe(int /*nccl_ranks*/) {
  throw Error("this kernels_bench was built without CUDA: --memory-probe needs a GPU build (cmake "
              "-DTRAINSIM_WITH_CUDA=ON); --apply-memory-probe works without one");
}

}  // namespace trainsim::kb
