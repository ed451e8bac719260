// Calibration round trip: the shapes a plan looks up → measured kernel records → system build
// (merge_kernels) → the estimate finds every one of them (no efficiency misses left) and the
// predicted GEMM time equals the measured one.
#include <gtest/gtest.h>

#include "test_estimate.h"
#include "calibration/kernels_file.h"
#include "calibration/kernels_merge.h"
#include "system/presets.h"
#include "estimate/estimate.h"
#include "estimate/shapes.h"

namespace trainsim {
namespace {

TEST(CalibrationRoundTripTest, MeasuredShapesRemoveMisses) {
  const ConfigText mt = resolve_config("model", "llama3-8b");
  ModelConfig m = load_model(mt.text, mt.source);
  m.layer_num = 4;
  const StrategyConfig s = load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1,
      "micro_batch_num": 4, "world_size": 8, "tp_size": 2, "pp_size": 1})", "inline");
  const ConfigText yt = resolve_config("system", "h100-sxm-80g");
  SystemConfig sys = load_system(yt.text, yt.source);

  const Estimate before = estimate(m, s, sys);
  const auto shapes = list_shapes(resolve_plan(m, s, sys, Mode::Default));
  ASSERT_EQ(before.misses.size(), shapes.size());
  ASSERT_FALSE(shapes.empty());

  // Pretend every kernel ran at 60% of the op's peak: time = flops / (0.6 · peak).
  KernelsDoc doc;
  doc.device.name = "fixture GPU";
  for (const auto& sh : shapes) {
    KernelResult r;
    r.kind = "compute";
    r.op = sh.op;
    r.key = sh.key;
    r.flops = sh.flops;
    r.time.n = 10;
    r.time.median = sh.flops / (0.6 * sys.ops.at(sh.op).peak_flops);
    r.time.min = r.time.p10 = r.time.p90 = r.time.max = r.time.mean = r.time.median;
    doc.results.push_back(r);
  }
  merge_kernels(sys, kernels_to_json_text(doc), "kernels.json");
  // What system build writes, read back.
  const SystemConfig built = load_system(system_to_json_text(sys), "system.json");
  for (const auto& sh : shapes) {
    ASSERT_TRUE(built.ops.at(sh.op).accurate.count(sh.key)) << sh.key;
    EXPECT_NEAR(built.ops.at(sh.op).accurate.at(sh.key), 0.6, 1e-9) << sh.key;
  }
  const Estimate after = estimate(m, s, built);
  EXPECT_TRUE(after.misses.empty());
  EXPECT_EQ(after.efficiency_hits, before.efficiency_hits + static_cast<int64_t>(before.misses.size()));
  EXPECT_EQ(list_shapes(resolve_plan(m, s, built, Mode::Default)).front().in_system, true);
}

}  // namespace
}  // namespace trainsim
