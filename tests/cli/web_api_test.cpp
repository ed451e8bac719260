// The web app's API without a server: the same document as perf --json, errors naming the field.
#include "cli/web_api.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "system/presets.h"
#include "inputs/input_file.h"
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

// The README's Llama 3.1 8B example: the Hugging Face config and the Megatron-LM command line as a
// page sends them (documents in a POST body).
nlohmann::json readme_body() {
  const std::string dir = std::string(TRAINSIM_SOURCE_DIR) + "/docs/examples/llama3.1-8b/";
  nlohmann::json b;
  b["hf_config"] = nlohmann::json::parse(read_file(dir + "config.json"));
  b["megatron_args"] = read_file(dir + "megatron_args.sh");
  return b;
}

ApiResponse post(const std::string& path, const nlohmann::json& body) {
  return handle_api({"POST", path, {}, body.dump()});
}

// The page fills its fields from /api/resolve: a pasted line's strategy (tp 2, pp 4, 2 virtual
// stages, 16 GPUs, global batch 64) and a pasted config's model, switches as the line gives them
// (turned off only in the prediction); edits (set) on top. Before, the fields showed the preset.
TEST(WebApi, ResolveShowsWhatThePastedInputsSet) {
  const ApiResponse r = post("/api/resolve", readme_body());
  ASSERT_EQ(r.status, 200) << r.body;
  const auto j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j["strategy"]["tp_size"], 2);
  EXPECT_EQ(j["strategy"]["pp_size"], 4);
  EXPECT_EQ(j["strategy"]["interleaving_size"], 2);
  EXPECT_EQ(j["strategy"]["world_size"], 16);
  EXPECT_EQ(j["strategy"]["seq_len"], 4096);
  EXPECT_EQ(j["strategy"]["tp_comm_overlap"], true);
  EXPECT_EQ(j["global_batch_size"], 64);
  EXPECT_EQ(j["model"]["layer_num"], 32);
  EXPECT_EQ(j["model"]["vocab_size"], 128256);  // from config.json: the line leaves it to the tokenizer
  EXPECT_EQ(j["model_source"], "hf_config (request)");
  EXPECT_EQ(j["strategy_source"], "megatron_args (request)");

  nlohmann::json edited = readme_body();
  edited["set"] = {{"tp_size", "4"}, {"hidden_size", "5120"}};
  const auto e = nlohmann::json::parse(post("/api/resolve", edited).body);
  EXPECT_EQ(e["strategy"]["tp_size"], 4);
  EXPECT_EQ(e["strategy"]["pp_size"], 4);
  EXPECT_EQ(e["model"]["hidden_size"], 5120);

  // A line that describes the whole model is the model when none is sent; one that does not
  // (no --vocab-size) is an error next to the pasted line.
  nlohmann::json line_only = readme_body();
  line_only.erase("hf_config");
  line_only["model"] = "";
  const ApiResponse missing = post("/api/resolve", line_only);
  EXPECT_EQ(missing.status, 400);
  EXPECT_EQ(nlohmann::json::parse(missing.body)["field"], "megatron_args");
  line_only["megatron_args"] = line_only["megatron_args"].get<std::string>() + " --vocab-size 32000";
  const ApiResponse own = post("/api/resolve", line_only);
  ASSERT_EQ(own.status, 200) << own.body;
  EXPECT_EQ(nlohmann::json::parse(own.body)["model"]["vocab_size"], 32000);
}

// tp 3 on the pasted line is an error naming tp_size (shown next to the field), not a dropped edit.
TEST(WebApi, AnEditOnAPastedLineIsValidated) {
  nlohmann::json b = readme_body();
  b["set"] = {{"tp_size", "3"}};
  const ApiResponse r = post("/api/perf", b);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(nlohmann::json::parse(r.body)["field"], "tp_size");
  b["set"] = {{"tp_size", "4"}, {"global_batch_size", "128"}};
  const ApiResponse ok = post("/api/perf", b);
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(nlohmann::json::parse(ok.body)["parallelism"].get<std::string>().rfind("tp4.", 0), 0u);
  // The switches turned off are listed on the page as the summary lists them.
  const ApiResponse html = post("/api/report", b);
  EXPECT_NE(html.body.find("<li class=\"no-effect\">overlap_grad_reduce=true"), std::string::npos) << html.body;
}

// The search panel searches the request's own plan: its model, world size, global batch and
// sequence length (before: llama3-8b on 16 GPUs whatever was pasted); gpus / gbs replace them.
TEST(WebApi, SearchSearchesTheRequestsPlan) {
  nlohmann::json b;
  b["model"] = "qwen2.5-7b";
  b["strategy"] = "tp1-pp1-dp8-zero1";
  b["system"] = "h100-sxm-80g-measured";
  b["top"] = 5;
  const ApiResponse r = post("/api/search", b);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string g = resolve_config("strategy", "tp1-pp1-dp8-zero1").text;
  const auto st = nlohmann::json::parse(g);
  const int64_t gbs = st["micro_batch_size"].get<int64_t>() * st["micro_batch_num"].get<int64_t>() * 8;
  EXPECT_EQ(r.body.rfind("<p id=\"search-plan\">searched: Qwen2.5 7B on 8 GPUs (h100_sxm_80g_measured), global batch " +
                             std::to_string(gbs) + ", seq 4096</p>",
                         0),
            0u)
      << r.body.substr(0, 300);
  EXPECT_NE(r.body.find("circle"), std::string::npos);
  b["gpus"] = "16";
  b["gbs"] = 64;
  const ApiResponse r16 = post("/api/search", b);
  ASSERT_EQ(r16.status, 200) << r16.body;
  EXPECT_NE(r16.body.find("on 16 GPUs (h100_sxm_80g_measured), global batch 64"), std::string::npos);
  b["gpus"] = "x";
  const ApiResponse bad = post("/api/search", b);
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(nlohmann::json::parse(bad.body)["field"], "gpus");
}

}  // namespace
}  // namespace trainsim
