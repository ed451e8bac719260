#include "memory/non_tensor.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

namespace trainsim {

double allocator_reserved_bytes(double allocated_bytes, double fragmentation) {
  return allocated_bytes * (1.0 + fragmentation);
}

double nccl_communicator_bytes(int64_t group_size, int64_t channels, double channel_bytes) {
  if (group_size <= 1) return 0;
  return static_cast<double>(channels) * channel_bytes;
}

double nvls_communicator_bytes(int64_t local_ranks, int64_t channels, double chunk_bytes) {
  if (local_ranks < 2 || channels <= 0) return 0;
  return static_cast<double>(channels) * 2 * chunk_bytes * static_cast<double>(local_ranks);
}

double userbuffers_bytes(double tokens, double hidden, bool fp8) {
  const double gather = fp8 ? 1 : 2;  // 6 all-gather buffers
  return tokens * hidden * (6 * gather + 4 * 2);
}

namespace {
// Bytes of one receive slot beside the token's hidden bytes (DeepEP config.hpp): source meta 8,
// kNumMaxTopK = 128 int64 indices and fp32 weights, kNumMaxScales = 128 fp32 scales.
constexpr double kDeepepSlotMeta = 8 + 128 * 8 + 128 * 4 + 128 * 4;
constexpr int64_t kDeepepNvlPeers = 8;  // NUM_MAX_NVL_PEERS
double round_up_128(double b) { return std::ceil(b / 128) * 128; }
}  // namespace

double deepep_buffer_bytes(int64_t group_size, double hidden, int64_t num_sms, int64_t nvl_tokens, int64_t rdma_tokens) {
  if (group_size <= 1) return 0;
  const double hidden_bytes = hidden * 2;
  const double channels = static_cast<double>(num_sms / 2);
  const double nvl = static_cast<double>(std::min(group_size, kDeepepNvlPeers));
  const double rdma = static_cast<double>(std::max<int64_t>(group_size / kDeepepNvlPeers, 1));
  const double slot = hidden_bytes + kDeepepSlotMeta;
  double nvl_bytes = channels * nvl * (2 * rdma + 3) * 4 + channels * nvl * static_cast<double>(nvl_tokens) * slot;
  nvl_bytes = round_up_128(nvl_bytes);
  double rdma_bytes = 0;
  if (group_size > kDeepepNvlPeers) {
    rdma_bytes = channels * rdma * (kDeepepNvlPeers * 2 + 2) * 2 * 4 +
                 channels * rdma * static_cast<double>(rdma_tokens) * slot * 2;
    rdma_bytes = round_up_128(rdma_bytes);
  }
  return nvl_bytes + rdma_bytes;
}

double hybridep_buffer_bytes(int64_t nvl_ranks, double max_tokens, double hidden, double dispatch_bytes) {
  if (nvl_ranks <= 1) return 0;
  return static_cast<double>(nvl_ranks) * max_tokens * hidden * (dispatch_bytes + 2);
}

double library_workspace_bytes(int64_t streams, double workspace_bytes) {
  return static_cast<double>(streams) * workspace_bytes;
}

std::string NonTensorMemory::terms() const {
  std::string o = measured ? "measured (accelerator.unusable_mem_gbs)" : "CUDA context, NCCL buffers";
  if (!measured && nvls_bytes > 0) o += ", NVLS buffers";
  if (!measured && userbuffers_bytes > 0) o += ", TE userbuffers";
  if (!measured && ep_buffer_bytes > 0) o += ", DeepEP/HybridEP buffers";
  if (cuda_graph_bytes > 0) o += ", CUDA-graph pool";
  return o;
}

double cuda_graph_pool_bytes(const ModelConfig& m, const Settings& s, int64_t layers) {
  if (s.host.cuda_graphs == CudaGraphImpl::None || layers <= 0) return 0;
  const double tokens = static_cast<double>(s.batch.micro_batch_size * s.batch.seq_len) /
                        static_cast<double>(s.par.cp * (s.par.sp ? s.par.tp : 1));
  const double elem = s.prec.element_bytes();
  return 4 * tokens * static_cast<double>(m.hidden_size) * elem * static_cast<double>(layers);
}

NonTensorMemory non_tensor_memory(const ModelConfig& m, const Settings& s, const SystemConfig& sys) {
  NonTensorMemory out;
  // PyTorch's cuBLAS workspace and TransformerEngine's cuBLASLt workspace, on the compute stream.
  out.workspace_bytes = library_workspace_bytes(2, sys.cublas_workspace_bytes);
  out.cuda_graph_bytes =
      cuda_graph_pool_bytes(m, s, (m.layer_num + s.par.pp - 1) / std::max<int64_t>(1, s.par.pp));
  if (sys.unusable_mem_given) {
    out.measured = true;
    out.context_bytes = sys.unusable_mem_bytes;
    return out;
  }
  out.context_bytes = sys.cuda_context_bytes;
  auto add = [&](int64_t size) {
    const double b = nccl_communicator_bytes(size, sys.nccl_channels, sys.nccl_channel_buffer_bytes);
    if (b <= 0) return;
    out.nccl_bytes += b;
    ++out.communicators;
  };
  add(s.par.tp);
  add(s.par.cp);
  add(s.par.dp * s.par.cp);
  add(s.par.pp);
  if (m.is_moe()) {
    add(s.par.ep);
    add(s.par.etp);
    add(s.par.edp);
  }
  // NVLS: the reduction and gather groups, by their ranks inside one node.
  const int64_t node = std::max<int64_t>(sys.num_per_node, 1);
  auto local = [&](int64_t size, int64_t stride) { return std::min(size, std::max<int64_t>(node / stride, 1)); };
  auto add_nvls = [&](int64_t size, int64_t stride) {
    if (size <= 1) return;
    const double b = nvls_communicator_bytes(local(size, stride), sys.nvls_channels, sys.nvls_chunk_bytes);
    if (b <= 0) return;
    out.nvls_bytes += b;
    ++out.nvls_communicators;
  };
  add_nvls(s.par.tp, 1);
  add_nvls(s.par.dp * s.par.cp, s.par.tp);
  if (m.is_moe()) {
    add_nvls(s.par.etp, 1);
    add_nvls(s.par.edp, s.par.etp * s.par.ep);
  }
  const double tokens = static_cast<double>(s.batch.seq_len) * static_cast<double>(s.batch.micro_batch_size) /
                        static_cast<double>(std::max<int64_t>(s.par.cp, 1));
  const double hidden = static_cast<double>(m.hidden_size);
  if (s.ovl.tp_comm_overlap && s.par.sp) out.userbuffers_bytes = userbuffers_bytes(tokens, hidden, s.prec.fp8);
  if (m.is_moe() && s.moe.dispatcher == MoeDispatcher::Flex) {
    const int64_t group = s.par.ep * s.par.etp;
    if (s.moe.deepep) {
      out.ep_buffer_bytes = deepep_buffer_bytes(group, hidden, s.moe.deepep_num_sms.value_or(20),
                                                sys.deepep_nvl_chunk_tokens, sys.deepep_rdma_chunk_tokens);
    } else {
      // HybridEP: the micro-batch's local tokens per rank (sequence-parallel shard).
      const double local_tokens = tokens / static_cast<double>(s.par.sp ? s.par.tp : 1);
      out.ep_buffer_bytes = hybridep_buffer_bytes(std::min(group, node), local_tokens, hidden, s.prec.fp8 ? 1 : 2);
    }
  }
  return out;
}

}  // namespace trainsim
