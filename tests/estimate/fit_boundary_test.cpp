// One verdict everywhere: a plan whose compared peak is 2 GiB over its limit does not fit, and
// 2 GiB under fits, in the summary, the JSON report, the search and the web API alike. The
// device size is moved around the plan (Llama 3 8B, tp 1, dp 8, ZeRO-1 on the H100 preset), so the
// estimate itself is the same in every case.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_estimate.h"
#include "system/presets.h"
#include "core/units.h"
#include "estimate/fit.h"
#include "views/report.h"
#include "search/search.h"
#include "test_presets.h"
#include "cli/web_api.h"

namespace trainsim {
namespace {

struct Boundary {
  nlohmann::json system;  // the H100 preset with the device size that puts the plan `delta` GiB under its limit
  StrategyInputs in;
  Estimate e;
};

Boundary at(double delta_gib) {
  Boundary b;
  b.system = nlohmann::json::parse(resolve_config("system", "h100-sxm-80g").text);
  b.in.model = test::preset_model("llama3-8b");
  b.in.strategy = load_strategy(resolve_config("strategy", "tp1-pp1-dp8-zero1").text, "tp1-pp1-dp8-zero1");
  b.in.system = load_system(b.system.dump(), "h100");
  b.in.take_plan(resolve_plan(b.in.model, b.in.strategy, b.in.system, Mode::Default));
  const Estimate e0 = estimate(b.in.model, b.in.strategy, b.in.system);
  const double headroom = fit_verdict(e0, fit_rule(b.in.system, e0.mode)).headroom_bytes / kGiB;
  b.system["accelerator"]["mem_gbs"] = b.system["accelerator"]["mem_gbs"].get<double>() - headroom + delta_gib;
  b.in.system = load_system(b.system.dump(), "h100 (moved)");
  b.e = estimate(b.in.model, b.in.strategy, b.in.system);
  return b;
}

TEST(FitBoundary, TwoGibOverIsRejectedAndTwoUnderAcceptedEverywhere) {
  for (const double delta : {2.0, -2.0}) {
    SCOPED_TRACE(delta);
    const Boundary b = at(delta);
    const bool fits = delta > 0;
    // The verdict itself.
    const FitVerdict v = fit_verdict(b.e, fit_rule(b.in.system, b.e.mode));
    EXPECT_EQ(v.fits, fits);
    EXPECT_NEAR(v.headroom_bytes / kGiB, delta, 1e-9);
    // Summary and JSON report (perf).
    const std::string summary = estimate_summary(b.in, b.e);
    EXPECT_NE(summary.find(fits ? "\nfit        FITS: " : "\nfit        DOES NOT FIT: "), std::string::npos) << summary;
    const nlohmann::json j = nlohmann::json::parse(estimate_to_json(b.in, b.e));
    EXPECT_EQ(j["fits"], fits);
    EXPECT_NEAR(j["memory_headroom_gib"].get<double>(), delta, 1e-9);
    // Search over exactly this plan: feasible or rejected for memory.
    SearchSpace space;
    space.tp = space.pp = space.cp = space.ep = space.etp = space.vpp = {1};
    space.mbs = {1};
    space.zero = {1};
    space.recompute = {RecomputeKind::None};
    space.sp = {true};
    SearchOptions o;
    o.world_size = 8;
    o.global_batch = 64;
    o.base.seq_len = 4096;
    o.keep = 0;
    o.overlaps_on = false;  // exactly the preset's switches
    o.offload_when_nothing_fits = false;  // exactly this plan: no offloaded retry
    const SearchResult r = search(b.in.model, b.in.system, space, o);
    EXPECT_EQ(r.feasible, fits ? 1 : 0);
    if (fits) {
      ASSERT_EQ(r.candidates.size(), 1u);
      EXPECT_DOUBLE_EQ(r.candidates[0].iteration_time_s, b.e.iteration_time_s);
    }
    // The web API (trainsim serve) with the same documents.
    nlohmann::json body;
    body["model"] = "llama3-8b";
    body["strategy"] = "tp1-pp1-dp8-zero1";
    body["system"] = b.system;
    const ApiResponse res = handle_api({"POST", "/api/perf", {}, body.dump()});
    ASSERT_EQ(res.status, 200) << res.body;
    const nlohmann::json api = nlohmann::json::parse(res.body);
    EXPECT_EQ(api["fits"], fits);
    EXPECT_NEAR(api["memory_headroom_gib"].get<double>(), delta, 1e-9);
  }
}

}  // namespace
}  // namespace trainsim
