// The views table: every view renders what its function renders, and the web API answers each
// by name with its media type.
#include "views/registry.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/web_api.h"
#include "core/error.h"
#include "system/presets.h"
#include "views/html_report.h"
#include "views/memory_csv.h"
#include "views/predict.h"

namespace trainsim {
namespace {

Prediction llama_8b() {
  PlanRequest req;
  req.model = resolve_config("model", "llama3-8b");
  req.strategy = resolve_config("strategy", "tp2-pp2-dp2-zero1");
  return predict(req, "", "", resolve_config("system", "h100-sxm-80g"), MfuConvention::Megatron, Mode::Default);
}

TEST(ViewTable, EachViewRendersItsFunction) {
  const Prediction p = llama_8b();
  ViewOptions o;
  o.level = BreakdownLevel::Op;
  o.trace_detail = 1;
  EXPECT_EQ(view("json").render(p.in, p.estimate, o), estimate_to_json(p.in, p.estimate));
  EXPECT_EQ(view("summary").render(p.in, p.estimate, o),
            estimate_summary(p.in, p.estimate) + breakdown_table(p.estimate, BreakdownLevel::Op));
  EXPECT_EQ(view("html").render(p.in, p.estimate, o), perf_html(p.in, p.estimate));
  EXPECT_EQ(view("report").render(p.in, p.estimate, o), perf_report_section(p.in, p.estimate));
  EXPECT_EQ(view("trace").render(p.in, p.estimate, o), trace_json(p.estimate, {1}));
  EXPECT_EQ(view("memory_timeline").render(p.in, p.estimate, o), memory_timeline_csv(p.estimate, 1));
  EXPECT_EQ(view("breakdown_csv").render(p.in, p.estimate, o), breakdown_csv(p.estimate, BreakdownLevel::Op));
  EXPECT_EQ(views().size(), 7u);
}

TEST(ViewTable, UnknownNamesAndMissingLevelsAreUsageErrors) {
  try {
    (void)view("tarce");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "unknown view 'tarce'; valid values: summary, json, html, report, trace, memory_timeline, "
                           "breakdown_csv; did you mean 'trace'?");
  }
  const Prediction p = llama_8b();
  EXPECT_THROW((void)view("breakdown_csv").render(p.in, p.estimate, {}), UsageError);
}

TEST(ViewTable, TheWebApiAnswersEveryViewByName) {
  const std::vector<std::pair<std::string, std::string>> plan = {{"model", "llama3-8b"},
                                                                 {"strategy", "tp2-pp2-dp2-zero1"}};
  const Prediction p = llama_8b();
  for (const View& v : views()) {
    auto params = plan;
    if (v.name == "breakdown_csv" || v.name == "summary") params.emplace_back("level", "layer");
    const ApiResponse r = handle_api({"GET", "/api/view/" + std::string(v.name), params, ""});
    ASSERT_EQ(r.status, 200) << v.name << ": " << r.body;
    EXPECT_EQ(r.content_type, v.media_type) << v.name;
    ViewOptions o;
    if (params.size() > 2) o.level = BreakdownLevel::Layer;
    EXPECT_EQ(r.body, v.render(p.in, p.estimate, o)) << v.name;
  }
  const ApiResponse bad = handle_api({"GET", "/api/view/nope", plan, ""});
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(nlohmann::json::parse(bad.body)["error"].get<std::string>().find("unknown view 'nope'"), std::string::npos);
}

}  // namespace
}  // namespace trainsim
