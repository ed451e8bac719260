// Switches that cannot act in the chosen combination: what Megatron-LM accepts, trainsim accepts.
// Such a switch is turned off and reported (no_effect), in command lines, what-ifs and search
// candidates alike; only what Megatron-LM itself rejects stays an error.
#include "plan/validate.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "inputs/megatron_args.h"
#include "inputs/plan_request.h"
#include "core/error.h"
#include "plan/plan.h"
#include "views/report.h"
#include "search/search.h"
#include "test_errors.h"
#include "test_presets.h"
#include "views/predict.h"

namespace trainsim {
namespace {

const std::string kExamples = std::string(TRAINSIM_SOURCE_DIR) + "/docs/examples/";

// The README's example: Llama 3.1 8B, TP2 + SP, PP4 × 2 virtual stages, 16 GPUs, distributed
// optimizer, grad-reduce, param-gather and TP overlaps.
PlanRequest readme_request(std::vector<Override> overrides, const std::string& line = "") {
  PlanRequest r;
  // Named as in the README's command (the summary shows the names).
  r.hf_config = ConfigText{read_file(kExamples + "llama3.1-8b/config.json"), "docs/examples/llama3.1-8b/config.json"};
  r.megatron = ConfigText{line.empty() ? read_file(kExamples + "llama3.1-8b/megatron_args.sh") : line,
                          "docs/examples/llama3.1-8b/megatron_args.sh"};
  r.overrides = std::move(overrides);
  return r;
}

// The README's what-if: --tp 4 --gbs 128.
const std::vector<Override> kTp4Gbs128 = {{"tp_size", "4", "--tp 4"}, {"global_batch_size", "128", "--gbs 128"}};

Override set(const std::string& kv) { return parse_set_option(kv); }

std::vector<std::string> lines_of(const std::vector<NoEffect>& v) {
  std::vector<std::string> out;
  for (const NoEffect& n : v) out.push_back(no_effect_line(n));
  return out;
}

// Resolves (the plan check) on an H100 node: throws what perf would report.
void check(const PlanConfigs& p) {
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  (void)resolve_plan(p.model, p.strategy, sys, Mode::Default, {p.model_source, p.strategy_source, "h100"});
}

const char* const kNoDp = "changes nothing without data parallelism (dp·cp is 1, and edp for experts)";

TEST(NoEffect, ReadmeWhatIfsTurnMootSwitchesOff) {
  // The line as given: every switch acts.
  const PlanConfigs base = build_plan(readme_request({}), "", "");
  EXPECT_TRUE(base.no_effect.empty());
  EXPECT_TRUE(base.strategy.overlap_grad_reduce && base.strategy.overlap_param_gather && base.strategy.tp_comm_overlap);

  // --tp 4 --gbs 128 on 16 GPUs: dp 1, so neither data-parallel overlap has anything to hide.
  const PlanConfigs tp4 = build_plan(readme_request(kTp4Gbs128), "", "");
  EXPECT_EQ(tp4.strategy.dp_size(), 1);
  EXPECT_EQ(lines_of(tp4.no_effect),
            (std::vector<std::string>{std::string("overlap_grad_reduce=true ") + kNoDp + "; turned off",
                                      std::string("overlap_param_gather=true ") + kNoDp + "; turned off"}));
  EXPECT_FALSE(tp4.strategy.overlap_grad_reduce);
  EXPECT_FALSE(tp4.strategy.overlap_param_gather);
  EXPECT_TRUE(tp4.strategy.tp_comm_overlap);  // tp 4 with SP: still acts
  EXPECT_NO_THROW(check(tp4));

  // --tp 1: no tensor-parallel communication to overlap.
  const PlanConfigs tp1 = build_plan(readme_request({{"tp_size", "1", "--tp 1"}}), "", "");
  ASSERT_EQ(tp1.no_effect.size(), 1u);
  EXPECT_EQ(tp1.no_effect[0].key, "tp_comm_overlap");
  EXPECT_EQ(tp1.no_effect[0].value, "true");
  EXPECT_EQ(tp1.no_effect[0].reason, "changes nothing with tp_size 1 (no tensor-parallel communication)");
  EXPECT_FALSE(tp1.strategy.tp_comm_overlap);
  EXPECT_TRUE(tp1.strategy.overlap_grad_reduce);  // dp 4 now
  EXPECT_NO_THROW(check(tp1));

  // fp8 switched off after a recipe and fp8 gathers: both follow.
  const PlanConfigs fp8 = build_plan(
      readme_request({set("fp8=true"), set("fp8_recipe=blockwise"), set("fp8_param_gather=true"), set("fp8=false")}),
      "", "");
  EXPECT_EQ(lines_of(fp8.no_effect),
            (std::vector<std::string>{"fp8_recipe=\"blockwise\" changes nothing without fp8; turned off",
                                      "fp8_param_gather=true changes nothing without fp8; turned off"}));
  EXPECT_EQ(fp8.strategy.fp8_recipe, "delayed");
  EXPECT_FALSE(fp8.strategy.fp8_param_gather);
  EXPECT_NO_THROW(check(fp8));

  // DeepEP's SM count on a dense model, from the command line itself.
  const std::string line = read_file(kExamples + "llama3.1-8b/megatron_args.sh") + "\n  --moe-deepep-num-sms 24\n";
  const PlanConfigs sms = build_plan(readme_request({}, line), "", "");
  EXPECT_EQ(lines_of(sms.no_effect),
            (std::vector<std::string>{"moe_deepep_num_sms=24 changes nothing with a dense model; turned off"}));
  EXPECT_FALSE(sms.strategy.moe_deepep_num_sms.has_value());
  EXPECT_NO_THROW(check(sms));
}

// What the strict check says of a strategy that was not normalized: the same rules, as errors.
// Megatron FSDP (optim_grads_params) takes --overlap-param-gather for its prefetching, which its
// modeled gathers always do: turned off and reported, not rejected.
TEST(NoEffect, MegatronFsdpTurnsTheParamGatherOverlapOff) {
  const std::string line = read_file(kExamples + "llama3.1-8b/megatron_args.sh") +
                           " --use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params";
  const PlanConfigs p = build_plan(readme_request({}, line), "", "");
  EXPECT_EQ(p.strategy.zero_state, 3);
  EXPECT_EQ(lines_of(p.no_effect),
            (std::vector<std::string>{"overlap_param_gather=true changes nothing with zero_state 3 (Megatron FSDP's "
                                      "parameter gathers are prefetched ahead of the layers that need them); turned "
                                      "off"}));
  EXPECT_FALSE(p.strategy.overlap_param_gather);
  EXPECT_NO_THROW(check(p));
}

TEST(NoEffect, ValidatePlanReportsWhatNormalizeTurnsOff) {
  const PlanConfigs tp4 = build_plan(readme_request(kTp4Gbs128), "", "");
  StrategyConfig raw = tp4.strategy;
  raw.overlap_grad_reduce = raw.overlap_param_gather = true;
  const auto issues = validate_plan(tp4.model, raw, test::preset_system("h100-sxm-80g"), {"m", "s.json", "h100"});
  ASSERT_EQ(issues.size(), 2u);
  EXPECT_EQ(issues[0].str(), std::string("s.json: /overlap_grad_reduce: ") + kNoDp + "; set it to false");
  EXPECT_EQ(issues[1].str(), std::string("s.json: /overlap_param_gather: ") + kNoDp + "; set it to false");
  EXPECT_EQ(moot_switches(tp4.model, raw, Mode::Default).size(), 2u);
  EXPECT_EQ(normalize_strategy(tp4.model, raw, Mode::Default).size(), 2u);
  EXPECT_TRUE(validate_plan(tp4.model, raw, test::preset_system("h100-sxm-80g"), {}).empty());
  EXPECT_TRUE(normalize_strategy(tp4.model, raw, Mode::Default).empty());  // nothing left
}

TEST(NoEffect, DependentSwitchesFollowInOrder) {
  const ModelConfig llama = test::preset_model("llama3-8b");
  StrategyConfig s;
  s.seq_len = 4096;
  s.micro_batch_size = 1;
  s.micro_batch_num = 4;
  s.tp_size = 2;
  s.pp_size = 2;
  s.world_size = 8;
  s.cp_comm_type = "a2a+p2p";  // a what-if --cp 1 on a hierarchical CP plan
  s.hierarchical_context_parallel_sizes = {2, 2};
  s.cross_entropy_fusion_impl = "linear";  // without cross_entropy_loss_fusion
  s.lce_vocab_split_size = 4096;
  const auto off = normalize_strategy(llama, s, Mode::Default, "llama3-8b");
  EXPECT_EQ(lines_of(off),
            (std::vector<std::string>{
                "cp_comm_type=\"a2a+p2p\" changes nothing with cp_size 1; turned off",
                "cross_entropy_fusion_impl=\"linear\" changes nothing without cross_entropy_loss_fusion; turned off",
                "hierarchical_context_parallel_sizes=[2,2] changes nothing unless cp_comm_type is 'a2a+p2p'; "
                "turned off",
                "lce_vocab_split_size=4096 only applies to cross_entropy_fusion_impl 'linear'; turned off"}));
  EXPECT_EQ(s.cp_comm_type, "a2a");
  EXPECT_TRUE(s.hierarchical_context_parallel_sizes.empty());
  EXPECT_EQ(s.cross_entropy_fusion_impl, "native");
  EXPECT_EQ(s.lce_vocab_split_size, 3072);

  // MoE: the EP overlap has nothing to run beside with one micro-batch and no pipeline;
  // HybridEP's SM count then follows (it only slows compute that runs beside the dispatch).
  // DeepEP's stays: its SMs set its bandwidth.
  const ModelConfig mixtral = test::preset_model("mixtral-8x7b");
  StrategyConfig e;
  e.seq_len = 4096;
  e.micro_batch_size = 1;
  e.micro_batch_num = 1;
  e.world_size = 8;
  e.ep_size = 8;
  e.moe_token_dispatcher_type = "flex";
  e.moe_flex_dispatcher_backend = "hybridep";
  e.moe_hybridep_num_sms = 16;
  e.overlap_moe_expert_parallel_comm = true;
  StrategyConfig deepep = e;
  EXPECT_EQ(lines_of(normalize_strategy(mixtral, e, Mode::Default, "mixtral-8x7b")),
            (std::vector<std::string>{
                "overlap_moe_expert_parallel_comm=true changes nothing with one micro-batch and no pipeline: no "
                "forward runs beside a backward; turned off",
                "moe_hybridep_num_sms=16 changes nothing without overlap_moe_expert_parallel_comm: HybridEP's "
                "bandwidth is modeled by its links (no published per-SM figures), its SMs take nothing from compute "
                "when it runs alone; turned off"}));
  EXPECT_EQ(e.moe_flex_dispatcher_backend, "hybridep");  // the backend itself acts
  deepep.moe_flex_dispatcher_backend.reset();
  deepep.moe_hybridep_num_sms.reset();
  deepep.moe_deepep_num_sms = 24;
  EXPECT_EQ(lines_of(normalize_strategy(mixtral, deepep, Mode::Default, "mixtral-8x7b")),
            (std::vector<std::string>{
                "overlap_moe_expert_parallel_comm=true changes nothing with one micro-batch and no pipeline: no "
                "forward runs beside a backward; turned off"}));
  EXPECT_EQ(deepep.moe_deepep_num_sms, 24);
}

// Megatron-LM asserts on these: they stay errors, normalize_strategy leaves them.
TEST(NoEffect, WhatMegatronRejectsStaysAnError) {
  const ModelConfig llama = test::preset_model("llama3-8b");
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  StrategyConfig s;
  s.seq_len = 4096;
  s.micro_batch_size = 1;
  s.micro_batch_num = 4;
  s.tp_size = 8;
  s.enable_sequence_parallel = false;
  s.tp_comm_overlap = true;  // TE userbuffers need sequence parallelism
  s.zero_state = 0;
  s.overlap_param_gather = true;  // needs the distributed optimizer, even at dp 1
  EXPECT_TRUE(normalize_strategy(llama, s, Mode::Default).empty());
  const auto issues = validate_plan(llama, s, sys, {"m", "s.json", "h100"});
  ASSERT_EQ(issues.size(), 2u);
  EXPECT_EQ(issues[0].str(), "s.json: /overlap_param_gather: needs the distributed optimizer's parameter all-gather: "
                             "zero_state 1 or 2 (data_parallel_sharding_strategy optim or optim_grads), got 0");
  EXPECT_EQ(issues[1].str(), "s.json: /tp_comm_overlap: needs tensor parallelism with sequence parallelism "
                             "(TransformerEngine userbuffers), got tp_size 8, enable_sequence_parallel false");
}

// Compat mode reproduces SimuMax v1.2's checks: nothing is turned off there.
TEST(NoEffect, CompatModeStaysStrict) {
  const ModelConfig llama = test::preset_model("llama3-8b");
  StrategyConfig s;
  s.seq_len = 4096;
  s.micro_batch_size = 1;
  s.micro_batch_num = 4;
  s.fp8_param_gather = false;
  s.offload_modules = {"attn_norm"};
  const StrategyConfig before = s;
  EXPECT_TRUE(normalize_strategy(llama, s, Mode::SimuMax12).empty());
  EXPECT_EQ(strategy_to_json_text(s), strategy_to_json_text(before));
  const auto issues = validate_plan(llama, s, test::preset_system("h100-sxm-80g"), {"m", "s.json", "h100"},
                                    Mode::SimuMax12);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].str(), "s.json: /offload_modules: changes nothing without fine_grained_activation_offloading; "
                             "set it to true");
  EXPECT_EQ(moot_switches(llama, s, Mode::SimuMax12).size(), 1u);
}

// perf --json lists them (key, typed value, reason); the summary has one warning line each.
TEST(NoEffect, ReportedInJsonAndSummary) {
  const Prediction p = predict(readme_request(kTp4Gbs128),
                               "", "", resolve_config("system", "h100-sxm-80g"), MfuConvention::Megatron,
                               Mode::Default);
  const nlohmann::json j = nlohmann::json::parse(estimate_to_json(p.in, p.estimate));
  EXPECT_EQ(j["no_effect"], nlohmann::json::parse(std::string(R"([
      {"key": "overlap_grad_reduce", "value": true, "reason": ")") + kNoDp + R"("},
      {"key": "overlap_param_gather", "value": true, "reason": ")" + kNoDp + R"("}])"));
  const std::string summary = estimate_summary(p.in, p.estimate);
  EXPECT_NE(summary.find(std::string("\nwarning: overlap_grad_reduce=true ") + kNoDp + "; turned off\n"
                         "warning: overlap_param_gather=true " + kNoDp + "; turned off\n"),
            std::string::npos)
      << summary;
  // Without moot switches the list is empty.
  const Prediction q = predict(readme_request({}), "", "", resolve_config("system", "h100-sxm-80g"),
                               MfuConvention::Megatron, Mode::Default);
  EXPECT_EQ(nlohmann::json::parse(estimate_to_json(q.in, q.estimate))["no_effect"], nlohmann::json::array());
}

// The flex dispatcher (Megatron 0.16+): its backend is DeepEP by default, or HybridEP with
// --moe-flex-dispatcher-backend hybridep; "flex" alone was refused ("needs a backend").
TEST(NoEffect, FlexDispatcherRunsWithEitherBackend) {
  auto plan = [](const std::vector<Override>& sets) {
    PlanRequest r;
    r.hf_config = ConfigText{read_file(kExamples + "mixtral-8x7b/config.json"), "config.json"};
    r.megatron = ConfigText{read_file(kExamples + "mixtral-8x7b/megatron_args.sh"), "megatron_args.sh"};
    r.overrides = sets;
    return build_plan(r, "", "");
  };
  const PlanConfigs flex = plan({set("moe_token_dispatcher_type=flex")});
  EXPECT_TRUE(flex.strategy.deepep_backend());
  EXPECT_NO_THROW(check(flex));
  const PlanConfigs hybrid = plan({set("moe_token_dispatcher_type=flex"), set("moe_flex_dispatcher_backend=hybridep")});
  EXPECT_FALSE(hybrid.strategy.deepep_backend());
  EXPECT_NO_THROW(check(hybrid));
  // The backend without the flex dispatcher: not read by Megatron, turned off.
  const PlanConfigs a2a = plan({set("moe_flex_dispatcher_backend=hybridep")});
  EXPECT_EQ(lines_of(a2a.no_effect),
            (std::vector<std::string>{"moe_flex_dispatcher_backend=\"hybridep\" changes nothing without the flex "
                                      "dispatcher (moe_token_dispatcher_type 'flex'); turned off"}));
  EXPECT_FALSE(a2a.strategy.moe_flex_dispatcher_backend);
  // From a command line.
  EXPECT_EQ(parse_megatron_args("--num-experts 8 --moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep",
                                "f")
                .strategy["moe_flex_dispatcher_backend"],
            "hybridep");
}

// Finding: "--tp 3" on 64 GPUs and 32 heads must name the sizes, not a batch derived from them.
TEST(NoEffect, SizesThatDoNotFactorNameTheRootCause) {
  PlanRequest r;
  r.hf_config = ConfigText{read_file(kExamples + "mixtral-8x7b/config.json"), "config.json"};
  r.megatron = ConfigText{read_file(kExamples + "mixtral-8x7b/megatron_args.sh"), "megatron_args.sh"};
  r.overrides = {{"tp_size", "3", "--tp 3"}};
  const PlanConfigs p = build_plan(r, "", "");
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  try {
    (void)resolve_plan(p.model, p.strategy, sys, Mode::Default, {"config.json", p.strategy_source, "h100"});
    FAIL() << "tp 3 accepted";
  } catch (const ConfigError& e) {
    ASSERT_GE(e.issues().size(), 2u);
    EXPECT_EQ(e.issues()[0].str(), "megatron_args.sh with --tp 3: /world_size: 64 is not divisible by "
                                   "tp_size·cp_size·pp_size = 12; valid world sizes are multiples of 12");
    bool heads = false;
    for (const Issue& i : e.issues())
      heads = heads || i.str() == "megatron_args.sh with --tp 3: /tp_size: 3 does not divide head_num (32) of model "
                                  "config.json; valid values: 1, 2, 4, 8, 16, 32";
    EXPECT_TRUE(heads) << e.what();
  }
}

// Search candidates get their moot switches turned off instead of being rejected: on 2 GPUs,
// tp 2 leaves no data parallelism and tp 1 no tensor parallelism.
TEST(NoEffect, SearchTurnsMootSwitchesOffPerCandidate) {
  ModelConfig m = test::preset_model("llama3-8b");
  m.layer_num = 2;
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  SearchSpace space;
  space.tp = {1, 2};
  space.pp = {1};
  space.mbs = {1};
  space.zero = {1};
  space.vpp = {1};
  space.recompute = {RecomputeKind::None};
  SearchOptions o;
  o.world_size = 2;
  o.global_batch = 4;
  o.base.seq_len = 4096;
  o.base.overlap_grad_reduce = o.base.overlap_param_gather = o.base.tp_comm_overlap = true;
  o.keep = 0;
  o.threads = 1;
  const SearchResult r = search(m, sys, space, o);
  for (const auto& [reason, n] : r.rejected_by_reason)
    EXPECT_EQ(reason.rfind("illegal_", 0), std::string::npos) << reason << " " << n;
  ASSERT_EQ(r.candidates.size(), 2u);
  for (const Candidate& c : r.candidates) {
    const StrategyConfig& s = c.strategy;
    EXPECT_EQ(s.tp_comm_overlap, s.tp_size == 2) << s.tp_size;
    EXPECT_EQ(s.overlap_grad_reduce, s.tp_size == 1) << s.tp_size;
    EXPECT_EQ(s.overlap_param_gather, s.tp_size == 1) << s.tp_size;
  }
}

// Every Megatron-LM flag that takes a value and has a default, written out at that default in the
// README's command line (after the script, before the line's own flags: argparse keeps the last
// value, so the line's own settings stay), is accepted: Megatron-LM accepts it. The defaults come
// from the flag table the importer embeds (inputs/data/megatron-lm/flags.tsv).
TEST(NoEffect, EveryMegatronDefaultIsAccepted) {
  const std::string line = read_file(kExamples + "llama3.1-8b/megatron_args.sh");
  const std::string script = "pretrain_gpt.py";
  const size_t at = line.find(script);
  ASSERT_NE(at, std::string::npos);
  const PlanConfigs base = build_plan(readme_request({}), "", "");
  int tried = 0;
  for (const auto& [name, f] : megatron_flags()) {
    if (f.kind == "flag" || !f.default_value) continue;
    std::vector<std::string> values;
    const std::string& d = *f.default_value;
    if (f.kind == "list" && !d.empty() && d[0] == '[') {
      for (const auto& v : nlohmann::json::parse(d)) values.push_back(v.is_string() ? v.get<std::string>() : v.dump());
      if (values.empty()) continue;  // an empty list cannot be written out (nargs +)
    } else {
      values.push_back(d == "\"\"" ? std::string() : d);
    }
    std::string words = " " + name;
    for (const auto& v : values) words += " '" + v + "'";
    std::string with = line;
    with.insert(at + script.size(), words);
    ++tried;
    try {
      const PlanConfigs p = build_plan(readme_request({}, with), "", "");
      check(p);
      // Nothing the line sets changes; Megatron's own default changes nothing modeled either.
      EXPECT_EQ(strategy_to_json_text(p.strategy), strategy_to_json_text(base.strategy)) << words;
    } catch (const Error& e) {
      ADD_FAILURE() << words << ": " << e.what();
    }
  }
  EXPECT_GT(tried, 250);
}

// The fenced blocks of a Markdown file, each line without the fence's indentation.
std::vector<std::vector<std::string>> fenced_blocks(const std::string& text) {
  std::vector<std::vector<std::string>> blocks;
  std::istringstream in(text);
  std::string line;
  size_t indent = std::string::npos;  // npos: outside a block
  while (std::getline(in, line)) {
    const size_t first = line.find_first_not_of(' ');
    if (first != std::string::npos && line.compare(first, 3, "```") == 0) {
      if (indent == std::string::npos) {
        indent = first;
        blocks.emplace_back();
      } else {
        indent = std::string::npos;
      }
      continue;
    }
    if (indent != std::string::npos) blocks.back().push_back(line.size() > indent ? line.substr(indent) : "");
  }
  return blocks;
}

// The lines of the block that has a line starting with `first`, from that line on (a transcript's
// command lines before it left out); empty when there is none.
std::vector<std::string> block_starting(const std::vector<std::vector<std::string>>& blocks, const std::string& first) {
  for (const auto& b : blocks)
    for (size_t i = 0; i < b.size(); ++i)
      if (b[i].rfind(first, 0) == 0) return {b.begin() + static_cast<std::ptrdiff_t>(i), b.end()};
  return {};
}

// Every line of `block` other than "..." is a whole line of `output`.
void expect_lines_of(const std::vector<std::string>& block, const std::string& output) {
  ASSERT_FALSE(block.empty());
  for (const std::string& l : block) {
    if (l == "...") continue;
    EXPECT_NE(("\n" + output).find("\n" + l + "\n"), std::string::npos) << l << "\n" << output;
  }
}

// docs/inputs.md shows perf's output for the README's line and its --tp 4 --gbs 128 what-if.
TEST(NoEffect, InputsDocShowsTheOutput) {
  const auto blocks = fenced_blocks(read_file(std::string(TRAINSIM_SOURCE_DIR) + "/docs/inputs.md"));
  const ConfigText h100 = resolve_config("system", "h100-sxm-80g");
  const Prediction line = predict(readme_request({}), "", "", h100, MfuConvention::Megatron, Mode::Default);
  expect_lines_of(block_starting(blocks, "model      docs/examples/llama3.1-8b/config.json"),
                  estimate_summary(line.in, line.estimate));

  const Prediction tp4 = predict(readme_request(kTp4Gbs128), "", "", h100, MfuConvention::Megatron, Mode::Default);
  expect_lines_of(block_starting(blocks, "parallel   tp4."), estimate_summary(tp4.in, tp4.estimate));
  std::vector<std::string> json = block_starting(blocks, "  \"no_effect\": [");
  ASSERT_FALSE(json.empty());
  std::string doc = "{";
  for (const auto& l : json) {
    if (l == "...") break;  // the rest of the document
    doc += l + "\n";
  }
  doc.erase(doc.find_last_of(','));  // the fragment's trailing comma
  EXPECT_EQ(nlohmann::json::parse(doc + "}")["no_effect"],
            nlohmann::json::parse(estimate_to_json(tp4.in, tp4.estimate))["no_effect"]);
}

}  // namespace
}  // namespace trainsim
