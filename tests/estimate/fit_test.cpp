// The fit verdict: one rule (estimate/fit.h) for perf --json, the summary, --require-fit and search.
#include "estimate/fit.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "system/presets.h"
#include "core/units.h"
#include "cli/validation_runner.h"
#include "test_errors.h"

namespace trainsim {
namespace {

using test::error_of;

StageMemory stage(double alloc_gib, double mem_factor = 0.94) {
  StageMemory st;
  st.peak_alloc_bytes = alloc_gib * kGiB;
  st.peak_reserved_bytes = st.peak_alloc_bytes / mem_factor;
  return st;
}

SystemConfig h100_with(const char* key, double value) {
  const ConfigText t = resolve_config("system", "h100-sxm-80g");
  nlohmann::json j = nlohmann::json::parse(t.text);
  j["accelerator"][key] = value;
  return load_system(j.dump(), "sys.json");
}

// Compat mode (SimuMax's convention): a flat margin outside PyTorch.
TEST(Fit, ReservedPeakAgainstDeviceLessUnusable) {
  const SystemConfig sys = load_system(resolve_config("system", "h100-sxm-80g").text, "h100");
  const FitRule r = fit_rule(sys, Mode::SimuMax12);
  // 79.65 GiB device − 6 GiB unusable (the default) = 73.65 GiB limit.
  EXPECT_NEAR(r.limit_bytes() / kGiB, 73.65, 1e-9);
  // 65.8 GiB allocated / 0.94 = 70 GiB reserved: 3.65 GiB headroom.
  const FitVerdict ok = fit_verdict(stage(65.8), r);
  EXPECT_TRUE(ok.known);
  EXPECT_TRUE(ok.fits);
  EXPECT_NEAR(ok.headroom_bytes / kGiB, 3.65, 1e-9);
  // 70.5 GiB allocated / 0.94 = 75 GiB reserved: 1.35 GiB over.
  const FitVerdict over = fit_verdict(stage(70.5), r);
  EXPECT_FALSE(over.fits);
  EXPECT_NEAR(over.headroom_bytes / kGiB, -1.35, 1e-9);
}

TEST(Fit, AllocatedRuleAndExactLimit) {
  FitRule r{80 * kGiB, 6 * kGiB, false};
  // Allocated 74 GiB against 74 GiB: at the limit fits (headroom 0); reserved would not.
  const FitVerdict v = fit_verdict(stage(74), r);
  EXPECT_TRUE(v.fits);
  EXPECT_DOUBLE_EQ(v.headroom_bytes, 0);
  r.use_reserved = true;
  EXPECT_FALSE(fit_verdict(stage(74), r).fits);
}

TEST(Fit, PlanVerdictIsTheStageWithLeastHeadroom) {
  Estimate e;
  e.stages = {stage(40), stage(72), stage(50)};
  const FitRule r{80 * kGiB, 2 * kGiB, false};
  const FitVerdict v = fit_verdict(e, r);
  EXPECT_TRUE(v.fits);
  EXPECT_NEAR(v.headroom_bytes / kGiB, 6, 1e-12);  // 78 − 72
}

TEST(Fit, UnknownWithoutDeviceMemory) {
  const FitVerdict v = fit_verdict(stage(500), FitRule{0, 6 * kGiB, true});
  EXPECT_FALSE(v.known);
  EXPECT_TRUE(v.fits);
}

TEST(Fit, UnusableMemoryComesFromTheSystemFile) {
  const FitRule r = fit_rule(h100_with("unusable_mem_gbs", 2.5), Mode::SimuMax12);
  EXPECT_NEAR(r.limit_bytes() / kGiB, 77.15, 1e-9);  // 79.65 − 2.5
  // Written back when the file gives it or it differs from the default.
  EXPECT_NE(system_to_json_text(h100_with("unusable_mem_gbs", 2.5)).find("\"unusable_mem_gbs\": 2.5"),
            std::string::npos);
  EXPECT_NE(system_to_json_text(h100_with("unusable_mem_gbs", 6)).find("\"unusable_mem_gbs\": 6"), std::string::npos);
  EXPECT_EQ(system_to_json_text(load_system(resolve_config("system", "h100-sxm-80g").text, "h100"))
                .find("unusable_mem_gbs"),
            std::string::npos);
  EXPECT_EQ(error_of([] { (void)h100_with("unusable_mem_gbs", 80); }),
            "sys.json: /accelerator/unusable_mem_gbs: 80 GiB leaves no memory of the device's 79.65 GiB; expected a "
            "few GiB (CUDA context, NCCL buffers)");
  EXPECT_EQ(error_of([] { (void)h100_with("unusable_mem_gbs", -1); }),
            "sys.json: /accelerator/unusable_mem_gbs: must be ≥ 0");
}

// Default mode: each stage's own memory outside PyTorch (StageMemory::non_tensor_bytes) comes off
// the device. A stage 2 GiB over the limit even without the allocator's reserve is rejected, one
// whose reserved peak is 2 GiB over but whose allocated bytes fit is TIGHT (accepted), 2 GiB under
// with the reserve fits.
TEST(Fit, DefaultModeSubtractsEachStagesMemoryOutsidePyTorch) {
  const SystemConfig sys = load_system(resolve_config("system", "h100-sxm-80g").text, "h100");
  const FitRule r = fit_rule(sys, Mode::Default);
  EXPECT_TRUE(r.stage_non_tensor);
  EXPECT_TRUE(r.cache_release);
  EXPECT_DOUBLE_EQ(r.unusable_bytes, 0);
  StageMemory st;
  st.non_tensor_bytes = 1.5 * kGiB;
  st.peak_alloc_bytes = (79.65 - 1.5 + 2) * kGiB;  // 2 GiB over 78.15 without the reserve
  st.peak_reserved_bytes = st.peak_alloc_bytes * 1.0544;
  FitVerdict v = fit_verdict(st, r);
  EXPECT_EQ(v.state, FitState::DoesNotFit);
  EXPECT_FALSE(v.fits);
  EXPECT_NEAR(v.floor_headroom_bytes / kGiB, -2 - 20.0 / 1024, 1e-9);
  st.peak_reserved_bytes = (79.65 - 1.5 + 2) * kGiB;  // 2 GiB over with the reserve
  st.peak_alloc_bytes = st.peak_reserved_bytes / 1.0544;  // 76.01 GiB: 2.12 GiB under without
  v = fit_verdict(st, r);
  EXPECT_EQ(v.state, FitState::Tight);
  EXPECT_TRUE(v.fits);
  EXPECT_NEAR(v.headroom_bytes / kGiB, -2, 1e-9);
  EXPECT_NEAR(v.floor_headroom_bytes / kGiB, 78.15 - 80.15 / 1.0544 - 20.0 / 1024, 1e-9);
  st.peak_reserved_bytes = (79.65 - 1.5 - 2) * kGiB;  // 2 GiB under
  st.peak_alloc_bytes = st.peak_reserved_bytes / 1.0544;
  v = fit_verdict(st, r);
  EXPECT_EQ(v.state, FitState::Fits);
  EXPECT_TRUE(v.fits);
  EXPECT_NEAR(v.headroom_bytes / kGiB, 2, 1e-9);
  // Compat mode: SimuMax's two states, whatever the allocated bytes.
  EXPECT_FALSE(fit_rule(sys, Mode::SimuMax12).cache_release);
  // A flat margin (search's --gmi-error) replaces the stage's own.
  FitRule flat = r;
  flat.stage_non_tensor = false;
  flat.unusable_bytes = 6 * kGiB;
  EXPECT_NEAR(fit_verdict(st, flat).headroom_bytes / kGiB, 79.65 - 6 - (79.65 - 3.5), 1e-9);
}

// The validation runner's count: failed cases and unknown verdicts are left out.
TEST(Fit, ValidationSummaryCountsThePredictedRuns) {
  auto result = [](const char* name, bool known, double headroom_gib, const char* error = "", bool tight = false) {
    CaseResult r;
    r.name = name;
    r.error = error;
    r.fit.known = known;
    r.fit.state = headroom_gib >= 0 ? FitState::Fits : tight ? FitState::Tight : FitState::DoesNotFit;
    r.fit.fits = r.fit.state != FitState::DoesNotFit;
    r.fit.headroom_bytes = headroom_gib * kGiB;
    return r;
  };
  const FitSummary f = summarize_fit({result("a", true, 3.5), result("b", true, -1.25), result("c", true, 0.5),
                                      result("d", false, 0), result("e", true, -9, "failed"),
                                      result("t", true, -0.5, "", true)});
  EXPECT_EQ(f.predicted, 4);
  EXPECT_EQ(f.fits, 3);  // TIGHT counts as fitting
  EXPECT_DOUBLE_EQ(f.least_headroom_gib, -1.25);
  EXPECT_EQ(f.least_case, "b");
  EXPECT_EQ(f.not_fit, std::vector<std::string>{"b"});
  EXPECT_EQ(f.tight, std::vector<std::string>{"t"});
}

}  // namespace
}  // namespace trainsim
