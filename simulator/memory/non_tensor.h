// Device memory a training process holds besides the bytes its tensors allocate (default mode):
// the caching allocator's reserve above the allocated peak, and the memory outside PyTorch's
// allocator — the CUDA context with its kernel images, and NCCL's communicator buffers. The
// compat mode keeps SimuMax's conventions instead (reserved = allocated / mem_factor and a flat
// unusable_mem_gbs margin). Defaults are the system file's `accelerator` keys below; a measured
// value replaces each (docs/memory.md).
#pragma once

#include <cstdint>
#include <string>

#include "inputs/model_config.h"
#include "plan/settings.h"
#include "system/system_config.h"

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

/// NVLink SHARP (NVLS) buffers of one NCCL communicator on one rank [NCCL 2.20+
/// src/transport/nvls.cc, ncclNvlsBufferSetup: nvlsPerRankSize = nChannels · 2 · buffSize (a
/// reduce-scatter and an all-gather buffer per channel), nvlsTotalSize = nvlsPerRankSize · nHeads,
/// one head per rank of the communicator inside the node; buffSize = NCCL_NVLS_CHUNKSIZE, 128 KiB].
/// NVLS needs an NVSwitch node with multicast (NCCL_NVLS_ENABLE); a communicator with fewer than
/// two ranks in the node, or `channels` 0 (NVLS off), holds none.
[[nodiscard]] double nvls_communicator_bytes(int64_t local_ranks, int64_t channels, double chunk_bytes);

/// TransformerEngine's userbuffers of `tp_comm_overlap` (TE 1.x–2.x `module/base.py`
/// initialize_ub, Megatron `_initialize_tp_communicators`): ten buffers of the gathered activation
/// shape [seq·mbs/cp, hidden] — the all-gather ones (qkv_fprop, qkv_dgrad, proj_dgrad, fc1_fprop,
/// fc1_dgrad, fc2_dgrad) in fp8 (1 B) under fp8, else bf16; the reduce-scatter ones (proj_fprop,
/// fc2_fprop, qkv_wgrad, fc1_wgrad) in bf16. Userbuffers registers them with its own cudaMalloc,
/// outside PyTorch's allocator. `tokens` = seq·mbs/cp.
[[nodiscard]] double userbuffers_bytes(double tokens, double hidden, bool fp8);

/// DeepEP's normal-mode buffer of one rank (DeepEP `csrc/config.hpp` get_nvl_buffer_size_hint and
/// get_rdma_buffer_size_hint, sized by Megatron `fused_a2a.py` get_buffer for hidden_bytes =
/// hidden · 2): per channel (num_sms / 2) and per NVLink peer (at most 8) `nvl_tokens` receive
/// slots, per RDMA peer (ranks / 8, above 8 ranks) twice `rdma_tokens` slots, each slot a token's
/// hidden bytes plus its routing metadata (top-k indices int64 and weights fp32 for 128 slots,
/// 128 fp32 scales, source meta 8 B). The NVLink part is cudaMalloc'ed, the RDMA part NVSHMEM's
/// symmetric heap: both outside PyTorch.
[[nodiscard]] double deepep_buffer_bytes(int64_t group_size, double hidden, int64_t num_sms, int64_t nvl_tokens,
                                         int64_t rdma_tokens);

/// HybridEP's registered buffers of one rank (Megatron 0.16 `fused_a2a.py` HybridEPBuffer): a
/// dispatch receive buffer for `max_tokens` tokens of every rank of the NVLink domain in the
/// dispatch dtype (1 B fp8, 2 B bf16) and a combine buffer of the same tokens in bf16.
[[nodiscard]] double hybridep_buffer_bytes(int64_t nvl_ranks, double max_tokens, double hidden, double dispatch_bytes);

/// Library workspaces a rank allocates through PyTorch (so inside the allocated bytes): PyTorch's
/// cuBLAS workspace of the compute stream (CUBLAS_WORKSPACE_CONFIG ":4096:8" = 32 MiB on sm90+,
/// "4096:2:16:8" = 8.125 MiB before) and TransformerEngine's cuBLASLt workspace
/// (get_cublas_workspace_size_bytes: 32 MiB on sm90+, 4 MiB before). One value per stream that
/// runs GEMMs: `streams` · `workspace_bytes`.
[[nodiscard]] double library_workspace_bytes(int64_t streams, double workspace_bytes);

/// What one rank holds outside PyTorch's allocator, and the library workspaces inside it.
struct NonTensorMemory {
  double context_bytes = 0;      // CUDA context and kernel images (accelerator.cuda_context_gbs)
  double nccl_bytes = 0;         // NCCL communicator buffers, every group of more than one rank
  int64_t communicators = 0;
  double nvls_bytes = 0;         // NVLS buffers of the collective groups with ranks in one node
  int64_t nvls_communicators = 0;
  double userbuffers_bytes = 0;  // TE userbuffers (tp_comm_overlap)
  double ep_buffer_bytes = 0;    // DeepEP / HybridEP buffers (flex dispatcher)
  double cuda_graph_bytes = 0;   // the CUDA graphs' private pool (cuda_graph_pool_bytes)
  bool measured = false;         // the system gives unusable_mem_gbs: its value replaces every term
  /// cuBLAS / cuBLASLt workspaces: allocated through PyTorch, so added to the allocated bytes,
  /// not to total().
  double workspace_bytes = 0;
  [[nodiscard]] double total() const {
    return context_bytes + nccl_bytes + nvls_bytes + userbuffers_bytes + ep_buffer_bytes + cuda_graph_bytes;
  }
  /// The terms total() holds, for messages: "CUDA context, NCCL buffers", then those of the plan
  /// that are not zero ("NVLS buffers", "TE userbuffers", "DeepEP/HybridEP buffers", "CUDA-graph
  /// pool"); a measured value replaces the first two ("measured (accelerator.unusable_mem_gbs)").
  [[nodiscard]] std::string terms() const;
};

/// The private memory pool of a rank's CUDA graphs (cuda_graph_impl local or transformer_engine):
/// every graphed layer keeps static input and output buffers for its forward graph and its
/// backward graph (the hidden state and its gradient: 4 tensors of micro_batch_size · seq_len /
/// (cp · tp under sequence parallelism) · hidden_size elements of the training dtype) that eager
/// code cannot reuse; the graphs' intermediates share one pool, reused as the graphs replay in
/// capture order (torch.cuda.graph's `pool`, TE make_graphed_callables, Megatron's
/// CudaGraphManager). `layers`: the rank's layers. 0 without graphs. A lower bound: the pool's
/// largest intermediate set is left to the allocator's reserve.
[[nodiscard]] double cuda_graph_pool_bytes(const ModelConfig& m, const Settings& s, int64_t layers);

/// The communicators a rank of the plan sends data over, one per group of more than one rank:
/// tp, cp, dp·cp (gradient reduction), pp (p2p), and for a MoE model ep, etp and the expert
/// data-parallel group. NCCL (2.22+, NCCL_RUNTIME_CONNECT) allocates buffers only on a group's
/// first collective, so the groups Megatron creates and never uses hold none. NVLS buffers for
/// the groups that run reductions and gathers (tp, dp·cp, etp, edp) with two or more ranks in a
/// node (Megatron's rank order tp-cp-dp, expert groups etp-ep-edp: a group's ranks in one node =
/// min(group, node / stride)); the userbuffers under tp_comm_overlap with sequence parallelism;
/// the flex dispatcher's DeepEP or HybridEP buffers over the ep·etp group.
/// With CUDA graphs, their pool for the average rank's layers (layer_num / pp_size, rounded
/// up), measured or not.
[[nodiscard]] NonTensorMemory non_tensor_memory(const ModelConfig& m, const Settings& s,
                                                const SystemConfig& sys);

}  // namespace trainsim
