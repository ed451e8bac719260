// The web app's API without a server: the same document as perf --json, errors naming the field.
#include "views/web_api.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "system/presets.h"
#include "views/report.h"
#include "views/predict.h"

namespace trainsim {
namespace {

ApiResponse get(const std::string& path, std::vector<std::pair<std::string, std::string>> params) {
  return handle_api({"GET", path, std::move(params), ""});
}

TEST(WebApi, PerfIsThePerfJsonDocument) {
  const ApiResponse r = get("/api/perf", {{"model", "llama3-8b"}, {"strategy", "tp2-pp2-dp2-zero1"},
                                          {"set", "micro_batch_num=16"}});
  ASSERT_EQ(r.status, 200) << r.body;
  PlanRequest req;
  req.model = resolve_config("model", "llama3-8b");
  req.strategy = resolve_config("strategy", "tp2-pp2-dp2-zero1");
  req.overrides = {{"micro_batch_num", "16", "--set micro_batch_num=16"}};
  const Prediction p = predict(req, "", "", resolve_config("system", "h100-sxm-80g"), MfuConvention::Megatron,
                               Mode::Default);
  EXPECT_EQ(r.body, estimate_to_json(p.in, p.estimate));
  EXPECT_EQ(r.content_type, "application/json");
}

TEST(WebApi, BadInputIsA400NamingTheField) {
  const ApiResponse r = get("/api/perf", {{"set", "tp_size=3"}});
  EXPECT_EQ(r.status, 400);
  const auto j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j["field"], "tp_size");  // the edited key, though world_size is reported first
  EXPECT_NE(j["error"].get<std::string>().find("/tp_size: 3 does not divide head_num (32)"), std::string::npos);
}

TEST(WebApi, PresetsByNameOnly) {
  const ApiResponse r = get("/api/perf", {{"model", "/etc/passwd"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(nlohmann::json::parse(r.body)["field"], "model");
  const ApiResponse typo = get("/api/perf", {{"model", "llama3-8"}});
  EXPECT_NE(typo.body.find("did you mean 'llama3-8b'?"), std::string::npos);
}

TEST(WebApi, PostTakesDocumentsAndRejectsMalformedBodies) {
  const std::string model = resolve_config("model", "llama3-8b").text;
  const ApiResponse ok = handle_api({"POST", "/api/perf", {}, R"({"model": )" + model + R"(, "set": {"tp_size": 4}})"});
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(nlohmann::json::parse(ok.body)["parallelism"], "tp4.sp.cp1.pp2.dp1.ep1.etp1.edp4");
  const ApiResponse typo = handle_api({"POST", "/api/perf", {}, R"({"megatron_args": "--num-layer 2"})"});
  EXPECT_EQ(typo.status, 400);
  EXPECT_EQ(nlohmann::json::parse(typo.body)["field"], "megatron_args");  // shown next to the pasted text
  const ApiResponse bad = handle_api({"POST", "/api/perf", {}, "{not json"});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(handle_api({"GET", "/api/nothing", {}, ""}).status, 404);
  EXPECT_EQ(handle_api({"DELETE", "/api/perf", {}, ""}).status, 405);
}

TEST(WebApi, ReportIsTheHtmlSection) {
  const ApiResponse r = get("/api/report", {});
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body.rfind("<section id=\"perf-report\">", 0), 0u);
  EXPECT_NE(web_app_page().find("/api/report"), std::string::npos);
}

}  // namespace
}  // namespace trainsim
