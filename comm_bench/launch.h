// Launch-side decisions of comm_bench, as plain C++ so they are tested on a CPU: which GPU a
// rank uses, how a size is timed (back-to-back loop as nccl-tests), how long communicator
// creation may take, and what every collective must produce (self-check).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "collectives.h"

namespace comm_bench {

/// Device index for a rank that is `local_rank` of `local_size` ranks on its node and sees
/// `visible` GPUs: one visible GPU is that rank's own (per-task binding such as
/// `srun --gpus-per-task=1` or a CUDA_VISIBLE_DEVICES per rank) → 0; otherwise one GPU per
/// local rank → local_rank. Throws RankError when neither fits.
[[nodiscard]] int select_device(int local_rank, int local_size, int visible);

/// What the timing loop needs from the device.
class CommTimerOps {
 public:
  virtual ~CommTimerOps() = default;
  virtual void launch() = 0;        // enqueue one collective
  virtual void record_start() = 0;
  virtual void record_stop() = 0;
  virtual double elapsed_s() = 0;   // wait for the stop event (with the deadline); seconds
};

/// nccl-tests' method: `warmup` untimed calls, then `iters` calls enqueued back to back between
/// one pair of events; returns the mean seconds per call (total / iters). Per-call events would
/// add the launch gap to every call and overstate α by a few µs.
[[nodiscard]] double time_back_to_back(CommTimerOps& ops, int warmup, int iters);

/// State of an asynchronous operation (nonblocking NCCL communicator creation).
enum class Poll { Ready, InProgress, Failed };

/// Polls `poll` until Ready, sleeping `interval_s` between polls; throws RankError naming
/// `what` when it fails (with `error()` as the reason) or when `timeout_s` passes on `now_s`
/// (then `on_timeout` runs first, e.g. ncclCommAbort).
void wait_ready(const std::function<Poll()>& poll, const std::function<std::string()>& error,
                const std::function<double()>& now_s, const std::function<void(double)>& sleep_s,
                const std::function<void()>& on_timeout, double timeout_s, const std::string& what,
                double interval_s = 1e-3);

/// Self-check data: element i of rank r's send buffer (small integers, exact in bf16 and in
/// their sums for up to 64 ranks).
[[nodiscard]] float self_check_value(int rank, int64_t i);

/// What rank `me` of `n` must hold in its receive buffer after collective `c` of `count`
/// elements per call shape (call_shape(c, ...).count) when every rank sent self_check_value.
/// P2P pairs ranks 0 and 1.
[[nodiscard]] std::vector<float> self_check_expected(Collective c, int me, int n, int64_t count);

/// bf16 bits of a float that bf16 holds exactly (the self-check values and their sums), and back.
[[nodiscard]] uint16_t exact_bf16_bits(float x);
[[nodiscard]] float bf16_bits_to_float(uint16_t bits);

}  // namespace comm_bench
