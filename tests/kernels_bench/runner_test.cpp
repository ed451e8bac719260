// Plan runner with a fake backend: output file, append-as-you-go, interruption and resume.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "calibration/kernel_grid.h"
#include "calibration/kernels_merge.h"
#include "system/presets.h"
#include "system/system_config.h"
#include "core/error.h"
#include "device_errors.h"
#include "runner.h"

namespace trainsim::kb {
namespace {

namespace fs = std::filesystem;

// Times every kernel at exactly half the device peak; can simulate a crash after N calls.
class FakeBackend : public Backend {
 public:
  explicit FakeBackend(std::string name = "Fake GPU") : name_(std::move(name)) {}
  DeviceFacts device() override {
    DeviceFacts d;
    d.name = name_;
    d.peak_bf16_flops = 1e15;
    d.peak_fp8_flops = 2e15;
    d.peak_mem_bytes_per_s = 2e12;
    return d;
  }
  std::string method_json(const MeasureOptions&) override { return R"({"timing": "fake"})"; }
  std::vector<CheckLine> self_check(const MeasureOptions&) override { return {}; }  // not used by run_plan
  KernelResult measure(const BenchItem& item, const MeasureOptions&) override {
    if (calls == crash_after) throw std::runtime_error("killed");
    ++calls;
    if (item.op == fail_op) throw Error("cuBLASLt returned CUBLAS_STATUS_NOT_SUPPORTED");
    if (calls == lost_at) throw DeviceLostError("cudaErrorIllegalAddress: an illegal memory access was encountered");
    clock += 1;
    KernelResult r;
    double t = item.flops > 0   ? item.flops / (0.5 * (item.op.rfind("fp8_", 0) == 0 ? 2e15 : 1e15))
               : item.bytes > 0 ? item.bytes / (0.5 * 2e12)
                                : 3e-6;
    r.time = {10, t, t, t, t, t, t, 0};
    r.impl = "fake";
    return r;
  }
  int calls = 0;
  int crash_after = -1;
  int lost_at = -1;     // call that leaves the device unusable
  double clock = 0;     // fake seconds: each measurement takes 1 s
  std::string fail_op;

 private:
  std::string name_;
};

class KernelsRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kb_runner_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    opt_.out_path = (dir_ / "kernels.json").string();
    opt_.provenance_json = R"({"tool": "test"})";
    ShapesDoc shapes = load_shapes(read_file(std::string(TRAINSIM_TEST_DATA) + "/kernels/shapes_small.json"), "s");
    plan_ = make_plan(shapes, PlanOptions{});
    log_ = std::tmpfile();
  }
  void TearDown() override {
    std::fclose(log_);
    fs::remove_all(dir_);
  }
  fs::path dir_;
  RunOptions opt_;
  BenchPlan plan_;
  std::FILE* log_ = nullptr;
};

TEST_F(KernelsRunnerTest, WritesEveryResultWithEfficiency) {
  FakeBackend b;
  RunSummary s = run_plan(plan_, b, opt_, log_);
  EXPECT_EQ(s.measured, 18);
  EXPECT_EQ(s.ok, 18);
  KernelsDoc doc = load_kernels(read_file(opt_.out_path), opt_.out_path);
  ASSERT_EQ(doc.results.size(), 18u);
  EXPECT_EQ(doc.device.name, "Fake GPU");
  EXPECT_EQ(doc.results[0].key, "b=1, m=4096, k=4096, n=6144, layout=TN, accumulate=False, out_dtype=bf16");
  EXPECT_DOUBLE_EQ(doc.results[0].efficiency, 0.5);
  EXPECT_DOUBLE_EQ(doc.results[3].efficiency, 0.5);   // fp8 against the fp8 peak
  EXPECT_DOUBLE_EQ(doc.results[10].efficiency, 0.5);  // copy against the memory peak
  EXPECT_FALSE(fs::exists(opt_.out_path + ".partial.jsonl"));
}

// kernels_bench --launch-floor through to a system file: the fake device times both chains at
// 3 µs per launch; system build's merge gives every bandwidth class latency_us 3 and
// graph_latency_us 3, and the written file reads back with them.
TEST_F(KernelsRunnerTest, LaunchFloorFileSetsTheSystemsLatencies) {
  PlanOptions o;
  o.launch_floor_only = true;
  FakeBackend b;
  RunSummary s = run_plan(make_plan(ShapesDoc{}, o), b, opt_, log_);
  EXPECT_EQ(s.ok, 2);
  SystemConfig sys = load_system(read_file(std::string(TRAINSIM_TEST_DATA) + "/kernels/base_system.json"), "base");
  merge_kernels(sys, read_file(opt_.out_path), opt_.out_path);
  const SystemConfig back = load_system(system_to_json_text(sys), "built.json");
  for (const char* name : {"default", "ce"}) {
    EXPECT_DOUBLE_EQ(back.bandwidths.at(name).latency_s, 3e-6) << name;
    ASSERT_TRUE(back.bandwidths.at(name).graph_latency_s.has_value()) << name;
    EXPECT_DOUBLE_EQ(*back.bandwidths.at(name).graph_latency_s, 3e-6) << name;
  }
}

TEST_F(KernelsRunnerTest, InterruptedRunResumesWithoutRemeasuring) {
  FakeBackend first;
  first.crash_after = 5;
  EXPECT_THROW((void)run_plan(plan_, first, opt_, log_), std::runtime_error);
  ASSERT_TRUE(fs::exists(opt_.out_path + ".partial.jsonl"));
  EXPECT_FALSE(fs::exists(opt_.out_path));

  FakeBackend again;
  try {
    (void)run_plan(plan_, again, opt_, log_);
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), opt_.out_path + ".partial.jsonl exists from an interrupted run; pass --resume "
                                                      "to continue it, or delete it to start over");
  }
  opt_.resume = true;
  RunSummary s = run_plan(plan_, again, opt_, log_);
  EXPECT_EQ(s.reused, 5);
  EXPECT_EQ(s.measured, 13);
  EXPECT_EQ(again.calls, 13);
  KernelsDoc doc = load_kernels(read_file(opt_.out_path), opt_.out_path);
  ASSERT_EQ(doc.results.size(), 18u);
  for (size_t i = 0; i < doc.results.size(); ++i) EXPECT_EQ(doc.results[i].id(), plan_.items[i].id());
}

// A grid run (grouped GEMM and memory-bound, bf16) interrupted and resumed: the results file
// carries the grid, and system build fits the grouped-GEMM model of all 20 series from it.
TEST_F(KernelsRunnerTest, GridRunResumesAndBuildsItsModels) {
  const GridSpec g = parse_grid_spec("grouped,memory", "bf16");
  ShapesDoc shapes;
  shapes.shapes = grid_compute_shapes(g);
  PlanOptions po;
  po.grid_memory = true;
  const BenchPlan plan = make_plan(shapes, po);
  ASSERT_EQ(plan.items.size(), 360u + 26u);
  opt_.provenance_json = R"({"tool": "test", "grid": )" + grid_description_json(g) + "}";
  FakeBackend first;
  first.crash_after = 100;
  EXPECT_THROW((void)run_plan(plan, first, opt_, log_), std::runtime_error);
  opt_.resume = true;
  FakeBackend again;
  const RunSummary s = run_plan(plan, again, opt_, log_);
  EXPECT_EQ(s.reused, 100);
  EXPECT_EQ(s.measured, 286);
  SystemConfig sys = load_system(resolve_config("system", "h100-sxm-80g").text, "h100");
  merge_kernels(sys, read_file(opt_.out_path), opt_.out_path);
  const ComputeOpConfig& c = sys.ops.at("group_matmul");
  ASSERT_TRUE(c.grouped_model);
  EXPECT_EQ(c.grouped_model->series().size(), 20u);
  EXPECT_EQ(c.grouped_model->points(), 180u);
  // The fake device runs every kernel at half its 1e15 FLOP/s peak.
  EXPECT_NEAR(c.grouped_model->predict(512, 8, 4096, 14336).s_per_flop * 0.5e15, 1.0, 1e-12);
}

TEST_F(KernelsRunnerTest, TornLastLineIsDroppedAndMeasuredAgain) {
  FakeBackend first;
  first.crash_after = 2;
  EXPECT_THROW((void)run_plan(plan_, first, opt_, log_), std::runtime_error);
  {
    std::ofstream out(opt_.out_path + ".partial.jsonl", std::ios::app);
    out << R"({"kind": "compute", "op": "matmul", "key": "b=1, m=4096, k=4096, n=6144, layout=NT, acc)";
  }
  FakeBackend again;
  opt_.resume = true;
  RunSummary s = run_plan(plan_, again, opt_, log_);
  EXPECT_EQ(s.reused, 2);
  EXPECT_EQ(s.measured, 16);
}

TEST_F(KernelsRunnerTest, FailuresAreRecordedAndRetriedOnResume) {
  FakeBackend first;
  first.fail_op = "group_matmul";
  RunSummary s = run_plan(plan_, first, opt_, log_);
  EXPECT_EQ(s.failed, 3);
  KernelsDoc doc = load_kernels(read_file(opt_.out_path), opt_.out_path);
  EXPECT_EQ(doc.results[4].status, "failed");
  EXPECT_EQ(doc.results[4].reason, "cuBLASLt returned CUBLAS_STATUS_NOT_SUPPORTED");
  FakeBackend again;
  opt_.resume = true;
  s = run_plan(plan_, again, opt_, log_);
  EXPECT_EQ(s.measured, 3);
  EXPECT_EQ(s.ok, 3);
}

TEST_F(KernelsRunnerTest, RefusesToResumeOnAnotherDevice) {
  FakeBackend first;
  (void)run_plan(plan_, first, opt_, log_);
  FakeBackend other("Other GPU");
  opt_.resume = true;
  try {
    (void)run_plan(plan_, other, opt_, log_);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot resume " + opt_.out_path + ": it was measured on 'Fake GPU', this device is 'Other GPU'");
  }
}

}  // namespace
}  // namespace trainsim::kb

namespace trainsim::kb {
namespace {

TEST_F(KernelsRunnerTest, StickyDeviceErrorStopsTheRunWithAClearMessage) {
  FakeBackend b;
  b.lost_at = 3;
  try {
    (void)run_plan(plan_, b, opt_, log_);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "stopped at item 3/18 (matmul b=1, m=6144, k=4096, n=4096, layout=NT, accumulate=True, out_dtype=fp32): "
              "the GPU is in an unrecoverable state: cudaErrorIllegalAddress: an illegal memory access was "
              "encountered; every later CUDA call in this process would fail too. The results so far are in " +
                  opt_.out_path + ".partial.jsonl; check the GPU (nvidia-smi, dmesg), then rerun with --resume");
  }
  EXPECT_EQ(b.calls, 3);  // nothing measured after the sticky error
  FakeBackend again;
  opt_.resume = true;
  RunSummary s = run_plan(plan_, again, opt_, log_);
  EXPECT_EQ(s.reused, 2);  // the failed item is measured again
  EXPECT_EQ(s.measured, 16);
}

TEST_F(KernelsRunnerTest, DeadlineLeavesTheRestForResume) {
  FakeBackend b;
  opt_.deadline_s = 4;
  opt_.now_s = [&b] { return b.clock; };
  RunSummary s = run_plan(plan_, b, opt_, log_);
  EXPECT_EQ(s.measured, 4);  // items start at t = 0, 1, 2, 3
  EXPECT_EQ(s.left, 14);
  EXPECT_EQ(load_kernels(read_file(opt_.out_path), opt_.out_path).results.size(), 4u);
  FakeBackend again;
  opt_.deadline_s = 0;
  opt_.resume = true;
  RunSummary rest = run_plan(plan_, again, opt_, log_);
  EXPECT_EQ(rest.reused, 4);
  EXPECT_EQ(rest.measured, 14);
}

}  // namespace
}  // namespace trainsim::kb
