// kernels_bench --memory-probe: measures what a training process holds on the GPU besides its
// tensors — the CUDA context with its kernel images, the cuBLAS and cuBLASLt workspaces, and one
// NCCL communicator's buffers — and writes them into a system file's `accelerator` keys
// (docs/memory.md, memory/non_tensor.h). The result file and the writer are host code (tested
// on CPU); the measurement is memory_probe_device.cpp (CUDA builds only).
#pragma once

#include <cstdint>
#include <string>

namespace trainsim::kb {

/// One probe's result: device-memory growth (cudaMemGetInfo's used bytes) over each step, bytes.
struct MemoryProbe {
  std::string device;                  // the GPU's name
  double context_bytes = 0;            // after cudaFree(0) and the module loads of one kernel per library
  double cublas_workspace_bytes = 0;   // a cuBLAS handle's first GEMM
  double cublaslt_workspace_bytes = 0; // a cuBLASLt GEMM with its workspace (as TransformerEngine)
  int64_t nccl_ranks = 0;              // ranks of the measured communicator (0: not measured)
  double nccl_communicator_bytes = 0;  // per rank, after the communicator's first all-reduce
};

/// The probe's result file (JSON: schema `trainsim.memory_probe` 1, values in MiB).
[[nodiscard]] std::string memory_probe_json(const MemoryProbe& p);

/// Reads a result file; throws ConfigError naming `source` and the JSON path.
[[nodiscard]] MemoryProbe parse_memory_probe(const std::string& text, const std::string& source);

/// The system document `system_text` with the measured keys written into `accelerator`:
/// cuda_context_gbs = context; cublas_workspace_mib = the larger of the two workspaces; and, when
/// a communicator was measured, nccl_channel_buffer_mib = its bytes / the system's nccl_channels
/// (the channel count stays; memory/non_tensor.h multiplies them again). A measured
/// `unusable_mem_gbs` (a total that would replace these terms) is removed. Other keys are kept.
/// Throws ConfigError when the system document does not parse or has no `accelerator` object.
[[nodiscard]] std::string apply_memory_probe(const std::string& system_text, const std::string& system_source,
                                             const MemoryProbe& p);

/// Measures on the first visible GPU (memory_probe_device.cpp); `nccl_ranks` GPUs of this
/// process form the communicator (ncclCommInitAll; 0 or 1: NCCL not measured). Throws Error in
/// a build without CUDA or without a usable GPU.
[[nodiscard]] MemoryProbe run_memory_probe(int nccl_ranks);

}  // namespace trainsim::kb
