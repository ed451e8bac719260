// A deadline for blocking calls that cannot time out themselves (MPI_Bcast, ncclCommInitRank).
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace comm_bench {

/// Runs `on_expiry(what)` on a helper thread if it is still armed `timeout_s` seconds after
/// construction. comm_bench passes a callback that prints the rank's message and MPI_Aborts, so
/// a rank that never joins the collective set-up ends every rank instead of hanging them.
class Watchdog {
 public:
  Watchdog(double timeout_s, std::string what, std::function<void(const std::string&)> on_expiry);
  /// Disarms and joins the helper thread.
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool disarmed_ = false;
  std::thread thread_;
};

}  // namespace comm_bench
