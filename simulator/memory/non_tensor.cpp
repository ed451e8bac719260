#include "memory/non_tensor.h"

#include <algorithm>

namespace trainsim {

double allocator_reserved_bytes(double allocated_bytes, double fragmentation) {
  return allocated_bytes * (1.0 + fragmentation);
}

double nccl_communicator_bytes(int64_t group_size, int64_t channels, double channel_bytes) {
  if (group_size <= 1) return 0;
  return static_cast<double>(channels) * channel_bytes;
}

double cuda_graph_pool_bytes(const ModelConfig& m, const StrategyConfig& s, int64_t layers) {
  if (s.cuda_graphs().empty() || layers <= 0) return 0;
  const double tokens = static_cast<double>(s.micro_batch_size * s.seq_len) /
                        static_cast<double>(s.cp_size * (s.sp() ? s.tp_size : 1));
  const double elem = s.dtype == "fp32" ? 4 : 2;
  return 4 * tokens * static_cast<double>(m.hidden_size) * elem * static_cast<double>(layers);
}

NonTensorMemory non_tensor_memory(const ModelConfig& m, const StrategyConfig& s, const SystemConfig& sys) {
  NonTensorMemory out;
  out.cuda_graph_bytes =
      cuda_graph_pool_bytes(m, s, (m.layer_num + s.pp_size - 1) / std::max<int64_t>(1, s.pp_size));
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
  add(s.tp_size);
  add(s.cp_size);
  add(s.dp_size() * s.cp_size);
  add(s.pp_size);
  if (m.is_moe()) {
    add(s.ep_size);
    add(s.etp_size);
    add(s.edp_size());
  }
  return out;
}

}  // namespace trainsim
