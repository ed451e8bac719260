// The set-up watchdog: fires once after its deadline, never after being disarmed.
#include "watchdog.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace comm_bench {
namespace {

TEST(WatchdogTest, FiresWithItsDescriptionAfterTheDeadline) {
  std::atomic<int> fired{0};
  std::string what;
  const auto t0 = std::chrono::steady_clock::now();
  {
    Watchdog w(0.05, "id broadcast", [&](const std::string& s) {
      what = s;
      ++fired;
    });
    while (fired.load() == 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10))
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(fired.load(), 1);
  EXPECT_EQ(what, "id broadcast");
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(50));
}

TEST(WatchdogTest, DisarmedWhenTheCallReturnsInTime) {
  std::atomic<int> fired{0};
  const auto t0 = std::chrono::steady_clock::now();
  { Watchdog w(60, "init", [&](const std::string&) { ++fired; }); }
  // Destruction does not wait for the deadline.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(fired.load(), 0);
}

}  // namespace
}  // namespace comm_bench
