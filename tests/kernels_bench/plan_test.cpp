// Sweep planning: item list, byte formulas, run-time estimate, dry-run text.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "system/presets.h"
#include "core/error.h"
#include "plan.h"

namespace trainsim::kb {
namespace {

ShapesDoc small_shapes() {
  return load_shapes(read_file(std::string(TRAINSIM_TEST_DATA) + "/kernels/shapes_small.json"), "small");
}

TEST(KernelsPlanTest, ShapesInFileOrderThenMemoryCases) {
  BenchPlan plan = make_plan(small_shapes(), PlanOptions{});
  // 10 shapes + copy + 4 permute + 2 cross-entropy + launch latency.
  ASSERT_EQ(plan.items.size(), 18u);
  EXPECT_EQ(plan.items[0].family, Family::Gemm);
  EXPECT_EQ(plan.items[3].op, "fp8_matmul");
  EXPECT_EQ(plan.items[4].family, Family::GroupedGemm);
  EXPECT_EQ(plan.items[8].family, Family::SdpaBwd);
  EXPECT_EQ(plan.items[10].id(), "memory|default|bytes=1073741824");
  EXPECT_EQ(plan.items[14].id(), "memory|permute_bwd|tokens=4096, hidden=7168, topk=8");
  EXPECT_EQ(plan.items[16].id(), "memory|ce_fusion|tokens=4096, vocab=128256");
  EXPECT_EQ(plan.items[17].id(), "latency|launch_latency|empty_kernel");
  PlanOptions no_mem;
  no_mem.memory = false;
  EXPECT_EQ(make_plan(small_shapes(), no_mem).items.size(), 10u);
}

// --launch-floor: the two launch-floor items alone, whatever the shapes.
TEST(KernelsPlanTest, LaunchFloorModeMeasuresTheTwoChains) {
  PlanOptions o;
  o.launch_floor_only = true;
  BenchPlan plan = make_plan(small_shapes(), o);
  ASSERT_EQ(plan.items.size(), 2u);
  EXPECT_EQ(plan.items[0].id(), "latency|eager_launch_floor|fill_4kib_x256");
  EXPECT_EQ(plan.items[1].id(), "latency|graph_launch_floor|fill_4kib_x256");
  EXPECT_EQ(plan.items[1].family, Family::Latency);
  EXPECT_EQ(plan.items[1].mem.pattern, "launch_chain_graph");
  EXPECT_EQ(plan.items[1].launches, 1);
  EXPECT_EQ(make_plan(ShapesDoc{}, o).items.size(), 2u);
}

// Each keyed op class is measured by the bench of its family (calibration/op_class.h); a class
// without shape keys has nothing to measure.
TEST(KernelsPlanTest, BenchFamilyComesFromTheOpClassTable) {
  PlanOptions opt;
  opt.memory = false;
  ShapesDoc doc;
  for (const char* op : {"matmul", "fp8_matmul", "group_matmul", "fp8_group_matmul", "sdp_fwd", "sdp_bwd"})
    doc.shapes.push_back(ShapeEntry{op, "", MatmulShape{}, 1, 1, std::nullopt, {}});
  const BenchPlan plan = make_plan(doc, opt);
  const Family want[] = {Family::Gemm,        Family::Gemm,    Family::GroupedGemm,
                         Family::GroupedGemm, Family::SdpaFwd, Family::SdpaBwd};
  ASSERT_EQ(plan.items.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(plan.items[i].family, want[i]) << plan.items[i].op;
  doc.shapes = {ShapeEntry{"default", "", MatmulShape{}, 1, 1, std::nullopt, {}}};
  try {
    (void)make_plan(doc, opt);
    ADD_FAILURE() << "a class without shape keys was planned";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "op class 'default' has no shape keys to measure; valid values: matmul, fp8_matmul, "
                           "group_matmul, fp8_group_matmul, sdp_fwd, sdp_bwd");
  }
}

TEST(KernelsPlanTest, MemoryBytesFollowTheSimulatorFormulas) {
  MemoryCase p;
  p.pattern = "permute_fwd";
  p.tokens = 4096;
  p.hidden = 7168;
  p.topk = 8;
  // (T*H + 3*P*H)*2 with T*H = 29360128, P*H = 8*T*H = 234881024.
  EXPECT_DOUBLE_EQ(memory_case_bytes(p), 1468006400.0);
  EXPECT_EQ(memory_case_launches(p), 2);
  MemoryCase ce;
  ce.pattern = "ce_fusion";
  ce.tokens = 4096;
  ce.vocab = 128256;
  // fwd + bwd, each 2*T*V*2 + 4*T = 2101346304 + 16384.
  EXPECT_DOUBLE_EQ(memory_case_bytes(ce), 4202725376.0);
  MemoryCase copy;
  copy.pattern = "copy";
  copy.copy_bytes = 1 << 30;
  EXPECT_DOUBLE_EQ(memory_case_bytes(copy), 2147483648.0);
  EXPECT_EQ(memory_case_class(copy), "default");
}

TEST(KernelsPlanTest, EstimateIsSetupPlusRunsTimesKernelAndOverhead) {
  BenchPlan plan = make_plan(small_shapes(), PlanOptions{});
  // GEMM: 0.2 s clock warm-up + 0.05 s setup + 25 runs x (206158430208 / (989e12 * 0.6) +
  // 100 MiB flush read / 3.35e12 + 20e-6).
  double expected = 0.2 + 0.05 + 25 * (206158430208.0 / (989e12 * 0.6) + 104857600.0 / 3.35e12 + 20e-6);
  EXPECT_NEAR(plan.items[0].est_s, expected, 1e-12);
  double total = 0;
  for (const auto& it : plan.items) total += it.est_s;
  EXPECT_DOUBLE_EQ(plan.est_total_s, total);
}

TEST(KernelsPlanTest, RejectsTooFewSamples) {
  PlanOptions o;
  o.samples = 5;
  try {
    (void)make_plan(small_shapes(), o);
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--samples 5: need at least 10 samples for a median with spread");
  }
}

TEST(KernelsPlanTest, DryRunTextAndDurations) {
  PlanOptions o;
  std::string text = format_plan(make_plan(small_shapes(), o), o);
  EXPECT_EQ(text.rfind("kernels_bench plan: 18 items (ce_fusion 2, default 1, fp8_matmul 1, group_matmul 3, "
                       "launch_latency 1, matmul 3, permute_bwd 2, permute_fwd 2, sdp_bwd 1, sdp_fwd 2)\n", 0),
            0u);
  EXPECT_NE(text.find("estimated run time: "), std::string::npos);
  EXPECT_EQ(format_duration(3723), "1h02m03s");
  EXPECT_EQ(format_duration(125), "2m05s");
  EXPECT_EQ(format_duration(7), "7s");
  EXPECT_EQ(format_duration(0.2), "<1s");
}

// Before: `--dry-run --samples 2000000000` printed "-9223372036854775808 s" (llround overflow).
TEST(KernelsPlanTest, HugeRunCountsAreRejectedAndDurationsNeverOverflow) {
  PlanOptions o;
  o.samples = 2000000000;
  try {
    (void)make_plan(small_shapes(), o);
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--samples 2000000000 / --warmup 5: at most 1000000 each");
  }
  EXPECT_EQ(format_duration(1e30), "3.17e+22 years");
  EXPECT_EQ(format_duration(std::numeric_limits<double>::infinity()), "unbounded");
  EXPECT_EQ(format_duration(std::nan("")), "unbounded");
}

}  // namespace
}  // namespace trainsim::kb
