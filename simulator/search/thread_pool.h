// Internal to search/: the search's worker threads, started once and given one job after another.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace trainsim::search_detail {

// The worker threads, one per Worker, started once for the whole search: what each keeps per
// thread (the engine's memory, the verdicts of the plans' schedules, the layouts parsed, the
// merged steps timed) serves every pass and every batch of seeds.
class ThreadPool {
 public:
  explicit ThreadPool(size_t n) {
    try {
      for (size_t i = 0; i < n; ++i) threads_.emplace_back([this, i] { loop(i); });
    } catch (...) {  // no thread to start: those started stop
      stop();
      throw;
    }
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  ~ThreadPool() { stop(); }
  // Runs job(i) on every thread i (a job catches its own exceptions) and returns when all have
  // returned, calling tick() on this thread every `interval` until then.
  void run(const std::function<void(size_t)>& job, std::chrono::duration<double> interval,
           const std::function<void()>& tick) {
    std::unique_lock<std::mutex> lock(mu_);
    job_ = &job;
    running_ = threads_.size();
    ++generation_;
    start_.notify_all();
    while (!done_.wait_for(lock, interval, [&] { return running_ == 0; })) tick();
    job_ = nullptr;
  }

 private:
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    start_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void loop(size_t i) {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(size_t)>* job = nullptr;
      {
        std::unique_lock<std::mutex> lock(mu_);
        start_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        job = job_;
      }
      (*job)(i);
      std::lock_guard<std::mutex> lock(mu_);
      if (--running_ == 0) done_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable start_, done_;
  const std::function<void(size_t)>* job_ = nullptr;
  size_t running_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace trainsim::search_detail
