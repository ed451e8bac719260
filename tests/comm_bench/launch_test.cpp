// comm_bench launch decisions: device per rank, back-to-back timing, init deadline, expected
// collective results.
#include <gtest/gtest.h>

#include <string>

#include "checks.h"
#include "launch.h"

namespace comm_bench {
namespace {

TEST(CommLaunchTest, DeviceSelectionHandlesPerTaskBinding) {
  EXPECT_EQ(select_device(5, 8, 8), 5);  // every GPU of the node visible
  EXPECT_EQ(select_device(5, 8, 1), 0);  // one GPU bound to this task
  EXPECT_EQ(select_device(0, 1, 4), 0);
  try {
    (void)select_device(3, 4, 2);
    FAIL() << "expected RankError";
  } catch (const RankError& e) {
    EXPECT_NE(std::string(e.what()).find("local rank 3 of 4 has no GPU of its own: 2 visible; launch one rank per GPU"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)select_device(0, 1, 0), RankError);
}

class FakeTimer : public CommTimerOps {
 public:
  void launch() override {
    log += "L";
    pending += 10e-6;
  }
  void record_start() override {
    log += "[";
    pending = 0;
  }
  void record_stop() override { log += "]"; }
  double elapsed_s() override { return pending + 3e-6; }  // plus one launch gap per pair of events
  std::string log;
  double pending = 0;
};

TEST(CommLaunchTest, BackToBackLoopTimesAllIterationsBetweenTwoEvents) {
  FakeTimer t;
  double s = time_back_to_back(t, 2, 4);
  EXPECT_EQ(t.log, "[LL][LLLL]");
  // 4 calls of 10 us plus one 3 us gap: 10.75 us per call (per-call events would give 13 us).
  EXPECT_DOUBLE_EQ(s, 43e-6 / 4);
}

TEST(CommLaunchTest, InitWaitTimesOutAndAborts) {
  double clock = 0;
  bool aborted = false;
  int polls = 0;
  try {
    wait_ready([&] { ++polls; return Poll::InProgress; }, [] { return std::string(); }, [&] { return clock; },
               [&](double s) { clock += s; }, [&] { aborted = true; }, 2.0, "NCCL communicator init", 0.5);
    FAIL() << "expected RankError";
  } catch (const RankError& e) {
    EXPECT_NE(std::string(e.what()).find("timeout: NCCL communicator init did not finish within 2 s (--init-timeout-s)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(aborted);
  EXPECT_EQ(polls, 5);  // t = 0, 0.5, 1, 1.5, 2
  int n = 0;
  wait_ready([&] { return ++n < 3 ? Poll::InProgress : Poll::Ready; }, [] { return std::string(); },
             [&] { return clock; }, [&](double s) { clock += s; }, [] {}, 2.0, "init");
  EXPECT_EQ(n, 3);
  EXPECT_THROW(wait_ready([] { return Poll::Failed; }, [] { return std::string("remote process exited"); },
                          [&] { return clock; }, [](double) {}, [] {}, 2.0, "init"),
               RankError);
}

TEST(CommLaunchTest, SelfCheckExpectations) {
  // Values (rank + i) % 4 - 1: rank 0 sends -1 0 1 2, rank 1 sends 0 1 2 -1.
  EXPECT_EQ(self_check_expected(Collective::AllReduce, 0, 2, 4), (std::vector<float>{-1, 1, 3, 1}));
  EXPECT_EQ(self_check_expected(Collective::AllGather, 1, 2, 2), (std::vector<float>{-1, 0, 0, 1}));
  EXPECT_EQ(self_check_expected(Collective::ReduceScatter, 1, 2, 2), (std::vector<float>{3, 1}));
  // All-to-all: rank 1 receives block 1 of every rank.
  EXPECT_EQ(self_check_expected(Collective::AllToAll, 1, 2, 2), (std::vector<float>{1, 2, 2, -1}));
  EXPECT_EQ(self_check_expected(Collective::P2P, 0, 2, 3), (std::vector<float>{0, 1, 2}));
}

}  // namespace
}  // namespace comm_bench

namespace comm_bench {
namespace {

TEST(CommLaunchTest, Bf16BitsOfExactValues) {
  EXPECT_EQ(exact_bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(exact_bf16_bits(-3.0f), 0xC040);
  EXPECT_EQ(bf16_bits_to_float(0x4100), 8.0f);
}

}  // namespace
}  // namespace comm_bench
