// Deadline thread for blocking set-up calls.
#include "watchdog.h"

#include <chrono>

namespace comm_bench {

Watchdog::Watchdog(double timeout_s, std::string what, std::function<void(const std::string&)> on_expiry) {
  thread_ = std::thread([this, timeout_s, what = std::move(what), on_expiry = std::move(on_expiry)] {
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [this] { return disarmed_; })) return;
    lock.unlock();
    on_expiry(what);
  });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    disarmed_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

}  // namespace comm_bench
