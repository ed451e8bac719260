// Launch-side decisions of comm_bench.
#include "launch.h"

#include <cstring>
#include <string>

#include "checks.h"

namespace comm_bench {

int select_device(int local_rank, int local_size, int visible) {
  if (visible < 1) throw RankError(rank_message("no GPU visible to this rank (CUDA_VISIBLE_DEVICES, driver?)"));
  if (visible == 1) return 0;
  if (local_rank < visible) return local_rank;
  throw RankError(rank_message("local rank " + std::to_string(local_rank) + " of " + std::to_string(local_size) +
                               " has no GPU of its own: " + std::to_string(visible) +
                               " visible; launch one rank per GPU (mpirun -np <GPUs per node> per node) or bind one "
                               "GPU per task"));
}

double time_back_to_back(CommTimerOps& ops, int warmup, int iters) {
  if (iters < 1) throw RankError(rank_message("timing: iters must be ≥ 1"));
  if (warmup > 0) {
    ops.record_start();
    for (int i = 0; i < warmup; ++i) ops.launch();
    ops.record_stop();
    (void)ops.elapsed_s();
  }
  ops.record_start();
  for (int i = 0; i < iters; ++i) ops.launch();
  ops.record_stop();
  return ops.elapsed_s() / iters;
}

void wait_ready(const std::function<Poll()>& poll, const std::function<std::string()>& error,
                const std::function<double()>& now_s, const std::function<void(double)>& sleep_s,
                const std::function<void()>& on_timeout, double timeout_s, const std::string& what,
                double interval_s) {
  const double deadline = now_s() + timeout_s;
  for (;;) {
    const Poll p = poll();
    if (p == Poll::Ready) return;
    if (p == Poll::Failed) throw RankError(rank_message(what + " failed: " + error()));
    if (now_s() >= deadline) {
      on_timeout();
      throw RankError(rank_message("timeout: " + what + " did not finish within " +
                                   std::to_string(static_cast<long long>(timeout_s)) +
                                   " s (--init-timeout-s); a rank may be missing or the network unreachable"));
    }
    sleep_s(interval_s);
  }
}

float self_check_value(int rank, int64_t i) { return static_cast<float>((rank + i) % 4) - 1.0f; }

std::vector<float> self_check_expected(Collective c, int me, int n, int64_t count) {
  const auto cnt = static_cast<size_t>(count);
  std::vector<float> out;
  switch (c) {
    case Collective::AllReduce:
      for (int64_t i = 0; i < count; ++i) {
        float s = 0;
        for (int r = 0; r < n; ++r) s += self_check_value(r, i);
        out.push_back(s);
      }
      break;
    case Collective::AllGather:
      for (int p = 0; p < n; ++p)
        for (int64_t i = 0; i < count; ++i) out.push_back(self_check_value(p, i));
      break;
    case Collective::ReduceScatter:
      for (int64_t i = 0; i < count; ++i) {
        float s = 0;
        for (int r = 0; r < n; ++r) s += self_check_value(r, me * count + i);
        out.push_back(s);
      }
      break;
    case Collective::AllToAll:
      for (int p = 0; p < n; ++p)
        for (int64_t i = 0; i < count; ++i) out.push_back(self_check_value(p, me * count + i));
      break;
    case Collective::P2P:
      out.reserve(cnt);
      for (int64_t i = 0; i < count; ++i) out.push_back(self_check_value(1 - me, i));
      break;
  }
  return out;
}

uint16_t exact_bf16_bits(float x) {
  uint32_t u = 0;
  std::memcpy(&u, &x, sizeof u);
  return static_cast<uint16_t>(u >> 16);
}

float bf16_bits_to_float(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f = 0;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace comm_bench
