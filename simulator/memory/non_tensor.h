// Device memory a training process holds besides the bytes its tensors allocate (default mode):
// the caching allocator's reserve above the allocated peak, and the memory outside PyTorch's
// allocator — the CUDA context with its kernel images, and NCCL's communicator buffers. The
// compat mode keeps SimuMax's conventions instead (reserved = allocated / mem_factor and a flat
// unusable_mem_gbs margin). Defaults are the system file's `accelerator` keys below; a measured
// value replaces each (docs/memory.md).
#pragma once

#include <cstdint>

#include "config/model_config.h"
#include "config/strategy_config.h"
#include "config/system_config.h"

namespace trainsim {

/// NCCL's buffers of one channel of one ring connection, bytes [NCCL 2.x src/include/device.h]:
/// SIMPLE DEFAULT_BUFFSIZE 1 << 22 = 4 MiB, LL128 120 elements × 640 threads × 8 steps × 8 B
/// = 4.6875 MiB, LL 8 lines × 512 threads × 8 steps × 16 B = 0.5 MiB: 9.1875 MiB.
inline constexpr double kNcclChannelBufferBytes = (4.0 + 4.6875 + 0.5) * 1024 * 1024;

/// Reserved bytes of the caching allocator holding `allocated` bytes: allocated × (1 + f). PyTorch's
/// allocator keeps freed blocks cached and splits 2 MiB-rounded segments, so it holds more than
/// the live tensors; f is `accelerator.allocator_fragmentation` (default measured on B200 runs).
[[nodiscard]] double allocator_reserved_bytes(double allocated_bytes, double fragmentation);

/// Buffers of one NCCL communicator on one rank: `channels` ring channels, each with one receive
/// connection of `channel_bytes` (NCCL connects the peers of a ring per channel; the SIMPLE, LL
/// and LL128 buffers of every protocol). A group of one rank creates no communicator: 0.
[[nodiscard]] double nccl_communicator_bytes(int64_t group_size, int64_t channels, double channel_bytes);

/// What one rank holds outside PyTorch's allocator.
struct NonTensorMemory {
  double context_bytes = 0;  // CUDA context and kernel images (accelerator.cuda_context_gbs)
  double nccl_bytes = 0;     // NCCL communicator buffers, every group of more than one rank
  int64_t communicators = 0;
  bool measured = false;     // the system gives unusable_mem_gbs: its value replaces both terms
  double cuda_graph_bytes = 0;  // the CUDA graphs' private pool (cuda_graph_pool_bytes)
  [[nodiscard]] double total() const { return context_bytes + nccl_bytes + cuda_graph_bytes; }
};

/// The private memory pool of a rank's CUDA graphs (cuda_graph_impl local or transformer_engine):
/// every graphed layer keeps static input and output buffers for its forward graph and its
/// backward graph (the hidden state and its gradient: 4 tensors of micro_batch_size · seq_len /
/// (cp · tp under sequence parallelism) · hidden_size elements of the training dtype) that eager
/// code cannot reuse; the graphs' intermediates share one pool, reused as the graphs replay in
/// capture order (torch.cuda.graph's `pool`, TE make_graphed_callables, Megatron's
/// CudaGraphManager). `layers`: the rank's layers. 0 without graphs. A lower bound: the pool's
/// largest intermediate set is left to the allocator's reserve.
[[nodiscard]] double cuda_graph_pool_bytes(const ModelConfig& m, const StrategyConfig& s, int64_t layers);

/// The communicators a rank of the plan sends data over, one per group of more than one rank:
/// tp, cp, dp·cp (gradient reduction), pp (p2p), and for a MoE model ep, etp and the expert
/// data-parallel group. NCCL (2.22+, NCCL_RUNTIME_CONNECT) allocates buffers only on a group's
/// first collective, so the groups Megatron creates and never uses hold none. With CUDA graphs,
/// their pool for the average rank's layers (layer_num / pp_size, rounded up), measured or not.
[[nodiscard]] NonTensorMemory non_tensor_memory(const ModelConfig& m, const StrategyConfig& s,
                                                const SystemConfig& sys);

}  // namespace trainsim
