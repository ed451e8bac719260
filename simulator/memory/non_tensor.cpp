#include "memory/non_tensor.h"

namespace trainsim {

double allocator_reserved_bytes(double allocated_bytes, double fragmentation) {
  return allocated_bytes * (1.0 + fragmentation);
}

double nccl_communicator_bytes(int64_t group_size, int64_t channels, double channel_bytes) {
  if (group_size <= 1) return 0;
  return static_cast<double>(channels) * channel_bytes;
}

NonTensorMemory non_tensor_memory(const ModelConfig& m, const StrategyConfig& s, const SystemConfig& sys) {
  NonTensorMemory out;
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
