// `trainsim search` as a library: its options (as given on the command line) to a search, and
// its outputs (table, summary, CSV, JSON). The CLI and the Python module both run it.
#include "search/report.h"

#include "views/predict.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

#include "inputs/output_file.h"
#include "system/presets.h"
#include "plan/pipeline_layout.h"
#include "core/error.h"
#include "core/text.h"
#include "core/units.h"

namespace trainsim {
namespace {

using Values = SearchArgs;

// Bound on the values a list option expands to (ranges included).
constexpr size_t kMaxListValues = size_t{1} << 17;

int64_t parse_int(const std::string& flag, const std::string& text) {
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size())
    throw UsageError("search: --" + flag + ": '" + text + "' is not an integer");
  return v;
}

double parse_number(const std::string& flag, const std::string& text) {
  double v = 0;
  if (!trainsim::parse_double(text, v))
    throw UsageError("search: --" + flag + ": '" + text + "' is not a number");
  return v;
}

std::vector<std::string> split_commas(const std::string& flag, const std::string& text) {
  std::vector<std::string> out = split(text, ',');
  for (const auto& item : out)
    if (item.empty()) throw UsageError("search: --" + flag + ": empty item in '" + text + "'");
  return out;
}

// "1,2,4", "1-16" or a mix ("1,2,8-10"); values must be ≥ `lo`.
std::vector<int64_t> parse_int_list(const Values& p, const std::string& flag, int64_t lo = 1) {
  std::vector<int64_t> out;
  if (!p.has(flag)) return out;
  for (const auto& item : split_commas(flag, p.get(flag))) {
    size_t dash = item.find('-', 1);
    const int64_t a = parse_int(flag, item.substr(0, dash));
    const int64_t b = dash == std::string::npos ? a : parse_int(flag, item.substr(dash + 1));
    if (a < lo || b < a || b - a > 100000)
      throw UsageError(
          strprintf("search: --%s: '%s' is not a value or range ≥ %lld (e.g. 1,2,4 or 1-16)",
                    flag.c_str(), item.c_str(), static_cast<long long>(lo)));
    // Many overlapping ranges could otherwise allocate without bound before deduplication.
    if (out.size() + static_cast<size_t>(b - a + 1) > kMaxListValues)
      throw UsageError(strprintf("search: --%s: more than %zu values", flag.c_str(), kMaxListValues));
    for (int64_t v = a; v <= b; ++v) out.push_back(v);
  }
  return out;
}

std::vector<RecomputeKind> parse_recompute(const Values& p) {
  std::vector<RecomputeKind> out;
  if (!p.has("recompute")) return out;
  const std::vector<std::string> names = {"none",          "full",           "full_block",     "selective",
                                          "selective_all", "selective_attn", "selective_mlp",  "core_attn",
                                          "core_attn+mlp", "mla_up_proj+mlp", "moe_act", "layernorm+moe_act", "moe", "full_uniform"};
  const std::pair<const char*, RecomputeKind> megatron[] = {
      {"core_attn", RecomputeKind::CoreAttn},     {"core_attn+mlp", RecomputeKind::CoreAttnMlp},
      {"mla_up_proj+mlp", RecomputeKind::MlaUpProjMlp}, {"moe_act", RecomputeKind::MoeAct},
      {"layernorm+moe_act", RecomputeKind::LayernormMoeAct}, {"moe", RecomputeKind::Moe},
      {"full_uniform", RecomputeKind::FullUniform}};
  for (const auto& item : split_commas("recompute", p.get("recompute"))) {
    if (item == "none")
      out.push_back(RecomputeKind::None);
    else if (item == "full" || item == "full_block")
      out.push_back(RecomputeKind::FullBlock);
    else if (item == "selective")
      out.insert(out.end(), {RecomputeKind::SelectiveAll, RecomputeKind::SelectiveAttn,
                             RecomputeKind::SelectiveMlp});
    else if (item == "selective_all")
      out.push_back(RecomputeKind::SelectiveAll);
    else if (item == "selective_attn")
      out.push_back(RecomputeKind::SelectiveAttn);
    else if (item == "selective_mlp")
      out.push_back(RecomputeKind::SelectiveMlp);
    else if (auto it = std::find_if(std::begin(megatron), std::end(megatron), [&](const auto& x) { return item == x.first; });
             it != std::end(megatron))
      out.push_back(it->second);
    else {
      std::string msg =
          "search: --recompute: unknown choice '" + item + "'; valid values: " + join(names);
      if (std::string s = suggest(item, names); !s.empty()) msg += "; did you mean '" + s + "'?";
      throw UsageError(msg);
    }
  }
  return out;
}

std::vector<bool> parse_sp(const Values& p) {
  std::vector<bool> out;
  if (!p.has("sp")) return out;
  for (const auto& item : split_commas("sp", p.get("sp"))) {
    if (item != "on" && item != "off")
      throw UsageError("search: --sp: '" + item +
                       "' is not a choice; valid values: on, off, on,off");
    out.push_back(item == "on");
  }
  return out;
}

std::string split_text(const Candidate& c) {
  const StrategyConfig& s = c.strategy;
  if (s.pipeline_model_parallel_layout) return "layout";
  if (s.account_for_embedding_in_pipeline_split || s.account_for_loss_in_pipeline_split) return "acct:E,L";
  if (s.num_layers_in_first_pipeline_stage)
    return "first:" + std::to_string(*s.num_layers_in_first_pipeline_stage);
  if (s.num_layers_in_last_pipeline_stage)
    return "last:" + std::to_string(*s.num_layers_in_last_pipeline_stage);
  return "even";
}

std::string recompute_text(const Candidate& c) {
  std::string out = recompute_kind_name(c.recompute);
  if (c.recompute == RecomputeKind::FullBlock)
    out += " x" + std::to_string(c.strategy.recompute_layer_num);
  if (c.recompute == RecomputeKind::FullUniform) out += " /" + std::to_string(c.strategy.recompute_unit_layers);
  return out;
}

// The stage whose total sets the iteration time.
const StageTime& critical_stage(const Candidate& c) {
  size_t best = 0;
  for (size_t i = 1; i < c.stage_times.size(); ++i)
    if (c.stage_times[i].total_s > c.stage_times[best].total_s) best = i;
  return c.stage_times[best];
}

std::string counts_text(const SearchResult& r) {
  std::string out;
  for (const auto& [reason, n] : r.rejected_by_reason)
    out += (out.empty() ? "" : ", ") + reason + " " + std::to_string(n);
  return out;
}

// Virtual stages per pipeline rank, also of a plan whose layout string sets them.
int64_t vpp_of(const StrategyConfig& s) {
  if (!s.pipeline_model_parallel_layout) return s.interleaving_size;
  std::vector<VirtualStage> stages;
  if (!parse_pipeline_layout(*s.pipeline_model_parallel_layout, stages, nullptr) || s.pp_size < 1) return 1;
  return std::max<int64_t>(1, static_cast<int64_t>(stages.size()) / s.pp_size);
}

std::string dispatcher_text(const StrategyConfig& s) {
  if (!s.moe_token_dispatcher_type) return "-";
  if (*s.moe_token_dispatcher_type == "flex") return s.moe_flex_dispatcher_backend.value_or("deepep");
  return *s.moe_token_dispatcher_type;
}

nlohmann::ordered_json candidate_json(const Candidate& c, size_t rank) {
  const StrategyConfig& s = c.strategy;
  nlohmann::ordered_json j;
  j["rank"] = rank;
  j["tp"] = s.tp_size;
  j["cp"] = s.cp_size;
  j["pp"] = s.pp_size;
  j["dp"] = s.dp_size();
  j["ep"] = s.ep_size;
  j["etp"] = s.etp_size;
  j["edp"] = s.edp_size();
  j["vpp"] = vpp_of(s);
  j["split"] = pipeline_split_name(c.split);
  j["mbs"] = s.micro_batch_size;
  j["mbc"] = s.micro_batch_num;
  j["zero"] = s.zero_state;
  j["sp"] = s.enable_sequence_parallel;
  j["cp_comm_type"] = s.cp_size > 1 ? s.cp_comm_type : "-";
  j["dispatcher"] = dispatcher_text(s);
  j["a2a_overlap"] = s.overlap_moe_expert_parallel_comm;
  j["straggler_ratio"] = c.straggler_ratio;
  j["variants"] = c.variants;
  j["recompute"] = recompute_kind_name(c.recompute);
  j["recompute_layer_num"] = s.recompute_layer_num;
  j["iteration_time_s"] = c.iteration_time_s;
  j["mfu"] = c.mfu;
  j["tflops_per_gpu"] = c.tflops_per_gpu;
  j["tokens_per_s_per_gpu"] = c.tokens_per_s_per_gpu;
  j["peak_memory_gib"] = c.peak_bytes / kGiB;
  j["fit_state"] = fit_state_name(c.fit.state);  // FITS or TIGHT for a feasible plan (estimate/fit.h)
  j["memory_headroom_gib"] = c.fit.headroom_bytes / kGiB;
  j["memory_headroom_without_reserve_gib"] = c.fit.floor_headroom_bytes / kGiB;
  for (const auto& t : c.stage_times)
    j["stage_times"].push_back({{"name", t.name}, {"fwd_compute_s", t.fwd_compute_s},
                                {"bwd_compute_s", t.bwd_compute_s}, {"recompute_s", t.recompute_s},
                                {"tp_comm_s", t.tp_comm_s}, {"pp_comm_s", t.pp_comm_s}, {"dp_comm_s", t.dp_comm_s},
                                {"optimizer_s", t.optimizer_s}, {"pipeline_s", t.pipeline_s},
                                {"bubble_s", t.bubble_s}, {"total_s", t.total_s}});
  for (const auto& m : c.stages)
    j["stages"].push_back({{"name", m.name},
                           {"model_gib", m.model_bytes / kGiB},
                           {"activation_cache_per_mb_gib", m.activation_cache_per_mb_bytes / kGiB},
                           {"in_flight_micro_batches", m.in_flight_micro_batches},
                           {"peak_alloc_gib", m.peak_alloc_bytes / kGiB},
                           {"peak_reserved_gib", m.peak_reserved_bytes / kGiB},
                           {"peak_phase", m.peak_phase}});
  j["strategy"] = nlohmann::ordered_json::parse(strategy_to_json_text(s));
  return j;
}

}  // namespace

SearchRun prepare_search(const PlanArgs& po, const SearchArgs& p,
                         const std::function<void(const PlanConfigs&)>& on_plan, const SearchDocuments& documents) {
  if (p.use_reserved && p.use_alloc) throw UsageError("search: --use-reserved and --use-alloc exclude each other");
  SearchRun run;
  // The base strategy: --strategy, the Megatron command line, or the strategy defaults.
  PlanRequest request = make_request(po);
  if (documents.add) documents.add(request);
  request.mode = compat_mode(p.compat, "search");
  request.normalize = false;  // each candidate is normalized with its own sizes
  const bool own_strategy = request.strategy || request.megatron;
  if (!own_strategy)
    request.strategy = ConfigText{R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 1})",
                                  "(search defaults)"};
  run.plan = build_plan(request, "", "");
  if (on_plan) on_plan(run.plan);
  // The system: given, or perf's default preset.
  const ConfigText yt = apply_system_overrides(
      documents.system ? *documents.system : resolve_config("system", p.get("system", kDefaultSystem)), request.overrides);
  run.system = load_system(yt.text, yt.source);

  SearchOptions& o = run.options;
  o.mode = request.mode;
  o.base = run.plan.strategy;
  if (p.has("seq")) o.base.seq_len = parse_int("seq", p.get("seq"));
  if (o.base.seq_len <= 0) o.base.seq_len = 4096;
  if (!request.megatron)
    for (const char* req : {"gpus", "global-batch"})
      if (!p.has(req)) throw UsageError(std::string("search: --") + req + " is required");
  o.world_size = p.has("gpus") ? parse_int("gpus", p.get("gpus")) : o.base.world_size;
  o.global_batch = p.has("global-batch") ? parse_int("global-batch", p.get("global-batch")) : o.base.global_batch_size();
  if (o.world_size < 1) throw UsageError("search: --gpus must be at least 1");
  if (o.global_batch < 1) throw UsageError("search: --global-batch must be at least 1");
  if (o.base.seq_len < 1) throw UsageError("search: --seq must be at least 1");
  o.keep = p.has("top") ? parse_int("top", p.get("top")) : 10;
  if (o.keep < 0) throw UsageError("search: --top must be 0 (every feasible candidate) or more");
  o.mfu = parse_mfu_convention(p.get("mfu", "megatron"), "--mfu");
  run.rank_by = p.get("rank-by", "time");
  const std::string& rank = run.rank_by;
  if (rank == "time")
    o.rank_by = RankBy::Time;
  else if (rank == "mfu")
    o.rank_by = RankBy::Mfu;
  else if (rank == "tokens")
    o.rank_by = RankBy::Tokens;
  else
    throw UsageError("search: --rank-by: unknown value '" + rank +
                     "'; valid values: time, mfu, tokens");
  if (p.has("threads")) {
    const int64_t t = parse_int("threads", p.get("threads"));
    if (t < 1 || t > 1024) throw UsageError("search: --threads must be in 1..1024");
    o.threads = static_cast<int>(t);
  }
  if (p.has("gmi-error")) {
    o.gmi_error_gib = parse_number("gmi-error", p.get("gmi-error"));
    if (!(*o.gmi_error_gib >= 0))
      throw UsageError("search: --gmi-error must be a non-negative number of GiB");
  }
  o.use_reserved = !p.use_alloc;
  o.tight = !p.no_tight;

  SearchSpace& space = run.space;
  space.tp = parse_int_list(p, "tp");
  space.pp = parse_int_list(p, "pp");
  space.cp = parse_int_list(p, "cp");
  space.ep = parse_int_list(p, "ep");
  space.etp = parse_int_list(p, "etp");
  space.vpp = parse_int_list(p, "vpp");
  space.mbs = parse_int_list(p, "mbs");
  space.zero = parse_int_list(p, "zero", 0);
  for (int64_t z : space.zero)
    if (z > 3)
      throw UsageError("search: --zero: " + std::to_string(z) +
                       " is not a ZeRO stage; valid values: 0, 1, 2, 3");
  space.recompute = parse_recompute(p);
  space.sp = parse_sp(p);
  auto names = [&](const std::string& flag, const std::vector<std::string>& valid) {
    std::vector<std::string> out;
    if (!p.has(flag)) return out;
    for (const auto& item : split_commas(flag, p.get(flag))) {
      if (std::find(valid.begin(), valid.end(), item) == valid.end()) {
        std::string msg = "search: --" + flag + ": unknown value '" + item + "'; valid values: " + join(valid);
        if (std::string near = suggest(item, valid); !near.empty()) msg += "; did you mean '" + near + "'?";
        throw UsageError(msg);
      }
      out.push_back(item);
    }
    return out;
  };
  space.cp_comm = names("cp-comm", {"p2p", "a2a", "all_gather", "a2a+p2p"});
  space.dispatcher = names("dispatcher", {"alltoall", "allgather", "deepep", "hybridep", "base"});
  for (const auto& v : names("a2a-overlap", {"on", "off"})) space.a2a_overlap.push_back(v == "on");
  if (p.has("overlaps")) {
    const std::string v = p.get("overlaps");
    if (v != "on" && v != "base") throw UsageError("search: --overlaps: '" + v + "' is not a choice; valid values: on, base");
    o.overlaps_on = v == "on";
  }
  o.rank_base = own_strategy;  // a plan was given: rank it among the candidates
  return run;
}

namespace {

std::string table_row(const Candidate& c, const std::string& rank) {
  const StrategyConfig& s = c.strategy;
  return strprintf(
      "%4s %3lld %3lld %-10s %3lld %5lld %3lld %3lld %3lld %-8s %4lld %5lld %4lld %-3s %-8s %-3s %-15s %9.3f "
      "%6.4f %10.1f %8.2f %8.2f %6.3f %4lld%s\n",
      rank.c_str(), static_cast<long long>(s.tp_size), static_cast<long long>(s.cp_size),
      (s.cp_size > 1 ? s.cp_comm_type : std::string("-")).c_str(), static_cast<long long>(s.pp_size),
      static_cast<long long>(s.dp_size()), static_cast<long long>(s.ep_size), static_cast<long long>(s.etp_size),
      static_cast<long long>(vpp_of(s)), split_text(c).c_str(), static_cast<long long>(s.micro_batch_size),
      static_cast<long long>(s.micro_batch_num), static_cast<long long>(s.zero_state),
      s.enable_sequence_parallel ? "on" : "off", dispatcher_text(s).c_str(),
      s.overlap_moe_expert_parallel_comm ? "on" : "off", recompute_text(c).c_str(), c.iteration_time_s, c.mfu,
      c.tokens_per_s_per_gpu, c.peak_bytes / kGiB, c.fit.headroom_bytes / kGiB, c.straggler_ratio, static_cast<long long>(c.variants),
      c.fit.tight() ? "  tight" : "");
}

}  // namespace

std::string search_table(const SearchResult& r) {
  std::string out =
      strprintf("%4s %3s %3s %-10s %3s %5s %3s %3s %3s %-8s %4s %5s %4s %-3s %-8s %-3s %-15s %9s %6s %10s %8s %8s %6s %4s\n",
                "rank", "tp", "cp", "cp_comm", "pp", "dp", "ep", "etp", "vpp", "split", "mbs", "mbc", "zero", "sp",
                "dispatch", "a2a", "recompute", "time_s", "mfu", "tok/s/gpu", "mem_gib", "headroom", "strag", "+var");
  for (size_t i = 0; i < r.candidates.size(); ++i) out += table_row(r.candidates[i], std::to_string(i + 1));
  if (r.base.evaluated) out += table_row(r.base.plan, "base");
  if (std::any_of(r.candidates.begin(), r.candidates.end(), [](const Candidate& c) { return c.fit.tight(); }))
    out += "(tight: fits only if PyTorch's caching allocator frees its cached blocks and retries; ranked by time)\n";
  if (r.candidates.empty())
    out += "(no strategy fits: more GPUs, --zero 2,3, a smaller --mbs or a smaller --gmi-error may help)\n";
  return out;
}

std::string search_base_line(const SearchResult& r) {
  const BaseResult& b = r.base;
  if (!b.evaluated) return b.error.empty() ? "" : "base plan: not estimated (" + b.error + ")\n";
  std::string out = strprintf("base plan (as given): %.3f s, %.2f GiB, ", b.plan.iteration_time_s, b.plan.peak_bytes / kGiB);
  if (!b.fits) return out + "does not fit\n";
  if (b.plan.fit.tight()) out += "tight, ";
  out += strprintf("rank %lld (%lld of the %lld feasible plans are faster)", static_cast<long long>(b.rank),
                   static_cast<long long>(b.rank - 1), static_cast<long long>(r.feasible));
  if (!r.candidates.empty() && r.candidates.front().iteration_time_s < b.plan.iteration_time_s)
    out += strprintf("; the best plan is %.1f %% faster",
                     100.0 * (1 - r.candidates.front().iteration_time_s / b.plan.iteration_time_s));
  return out + "\n";
}

std::vector<std::pair<std::string, std::string>> megatron_flags(const StrategyConfig& s) {
  std::vector<std::pair<std::string, std::string>> f;
  auto num = [](int64_t v) { return std::to_string(v); };
  auto flag = [&](const char* name, bool on) { if (on) f.emplace_back(name, ""); };
  f.emplace_back("--tensor-model-parallel-size", num(s.tp_size));
  flag("--sequence-parallel", s.sp());
  f.emplace_back("--context-parallel-size", num(s.cp_size));
  if (s.cp_size > 1) f.emplace_back("--cp-comm-type", s.cp_comm_type);
  if (!s.hierarchical_context_parallel_sizes.empty()) {
    std::string v;
    for (int64_t x : s.hierarchical_context_parallel_sizes) v += (v.empty() ? "" : " ") + num(x);
    f.emplace_back("--hierarchical-context-parallel-sizes", v);
  }
  f.emplace_back("--pipeline-model-parallel-size", num(s.pp_size));
  if (s.pipeline_model_parallel_layout)
    f.emplace_back("--pipeline-model-parallel-layout", "\"" + *s.pipeline_model_parallel_layout + "\"");
  else if (s.interleaving_size > 1) f.emplace_back("--num-virtual-stages-per-pipeline-rank", num(s.interleaving_size));
  if (s.num_layers_in_first_pipeline_stage)
    f.emplace_back("--decoder-first-pipeline-num-layers", num(*s.num_layers_in_first_pipeline_stage));
  if (s.num_layers_in_last_pipeline_stage)
    f.emplace_back("--decoder-last-pipeline-num-layers", num(*s.num_layers_in_last_pipeline_stage));
  flag("--account-for-embedding-in-pipeline-split", s.account_for_embedding_in_pipeline_split);
  flag("--account-for-loss-in-pipeline-split", s.account_for_loss_in_pipeline_split);
  if (s.ep_size > 1) f.emplace_back("--expert-model-parallel-size", num(s.ep_size));
  if (s.ep_size > 1 || s.etp_size > 1) f.emplace_back("--expert-tensor-parallel-size", num(s.etp_size));
  if (s.moe_token_dispatcher_type) f.emplace_back("--moe-token-dispatcher-type", *s.moe_token_dispatcher_type);
  if (s.moe_token_dispatcher_type == std::optional<std::string>("flex"))
    f.emplace_back("--moe-flex-dispatcher-backend", s.moe_flex_dispatcher_backend.value_or("deepep"));
  flag("--overlap-moe-expert-parallel-comm", s.overlap_moe_expert_parallel_comm);
  flag("--moe-shared-expert-overlap", s.moe_shared_expert_overlap);
  f.emplace_back("--micro-batch-size", num(s.micro_batch_size));
  if (s.zero_state == 1) flag("--use-distributed-optimizer", true);
  if (s.zero_state >= 2) {
    flag("--use-megatron-fsdp", true);
    f.emplace_back("--data-parallel-sharding-strategy", s.zero_state == 2 ? "optim_grads" : "optim_grads_params");
  }
  flag("--overlap-grad-reduce", s.overlap_grad_reduce);
  flag("--overlap-param-gather", s.overlap_param_gather);
  flag("--tp-comm-overlap", s.tp_comm_overlap);
  if (s.interleaving_size > 1 && !s.pp_comm_async) flag("--no-overlap-p2p-communication", true);
  flag("--use-cpu-initialization --optimizer-cpu-offload", s.optimizer_cpu_offload);
  if (s.is_recompute()) {
    if (s.megatron_recompute || s.recompute_granularity == std::optional<std::string>("sdp_only")) {
      f.emplace_back("--recompute-granularity", "selective");
      std::string mods;
      for (const auto& m : s.megatron_recompute ? s.megatron_recompute_modules : std::vector<std::string>{"core_attn"})
        mods += (mods.empty() ? "" : " ") + m;
      f.emplace_back("--recompute-modules", mods);
    } else if (s.recompute_granularity == std::optional<std::string>("full_block")) {
      f.emplace_back("--recompute-granularity", "full");
      const bool uniform = s.recompute_layer_num >= (int64_t{1} << 20);
      f.emplace_back("--recompute-method", uniform ? "uniform" : "block");
      f.emplace_back("--recompute-num-layers", num(uniform ? s.recompute_unit_layers : s.recompute_layer_num));
    } else {
      f.emplace_back("--recompute-granularity", "(" + *s.recompute_granularity + ", no Megatron flag)");
    }
  }
  return f;
}

std::string search_explain(const SearchResult& r) {
  if (r.candidates.empty()) return "explain: no plan fits\n";
  const Candidate& best = r.candidates.front();
  std::string out = "explain: the best plan against the base plan\n";
  if (!r.base.evaluated) return out + "  (the base plan was not estimated: " + r.base.error + ")\n";
  const Candidate& base = r.base.plan;
  const auto a = megatron_flags(base.strategy), b = megatron_flags(best.strategy);
  auto find = [](const std::vector<std::pair<std::string, std::string>>& v, const std::string& k) -> const std::string* {
    for (const auto& [f, val] : v)
      if (f == k) return &val;
    return nullptr;
  };
  auto shown = [](const std::string* v) { return v == nullptr ? std::string("(absent)") : v->empty() ? std::string("(set)") : *v; };
  out += "  Megatron flags that change (base -> best):\n";
  std::vector<std::string> keys;
  for (const auto& [k, v] : a) keys.push_back(k);
  for (const auto& [k, v] : b)
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  int changed = 0;
  for (const auto& k : keys) {
    const std::string *x = find(a, k), *y = find(b, k);
    if ((x == nullptr) == (y == nullptr) && (x == nullptr || *x == *y)) continue;
    out += strprintf("    %-42s %s -> %s\n", k.c_str(), shown(x).c_str(), shown(y).c_str());
    ++changed;
  }
  if (changed == 0) out += "    (none: the base plan is the best)\n";
  // Time terms of the stage that sets the step, base and best.
  auto crit = [](const Candidate& c) -> const StageTime& {
    size_t k = 0;
    for (size_t i = 1; i < c.stage_times.size(); ++i)
      if (c.stage_times[i].total_s > c.stage_times[k].total_s) k = i;
    return c.stage_times[k];
  };
  const StageTime &t0 = crit(base), &t1 = crit(best);
  out += strprintf("  time terms of the critical stage (s): %-12s %10s %10s %10s\n", "", "base", "best", "change");
  struct Term { const char* name; double a, b; };
  const Term terms[] = {{"forward compute", t0.fwd_compute_s, t1.fwd_compute_s},
                        {"backward compute", t0.bwd_compute_s, t1.bwd_compute_s},
                        {"recompute", t0.recompute_s, t1.recompute_s},
                        {"TP communication", t0.tp_comm_s, t1.tp_comm_s},
                        {"PP communication", t0.pp_comm_s, t1.pp_comm_s},
                        {"DP communication", t0.dp_comm_s, t1.dp_comm_s},
                        {"optimizer", t0.optimizer_s, t1.optimizer_s},
                        {"bubble", t0.bubble_s, t1.bubble_s},
                        {"step", base.iteration_time_s, best.iteration_time_s}};
  for (const Term& t : terms)
    if (std::abs(t.b - t.a) >= 0.005 * base.iteration_time_s || std::string(t.name) == "step")
      out += strprintf("    %-47s %10.3f %10.3f %+10.3f\n", t.name, t.a, t.b, t.b - t.a);
  out += strprintf("    %-47s %10.3f %10.3f\n", "straggler factor", base.straggler_ratio, best.straggler_ratio);
  out += strprintf("    %-47s %10.2f %10.2f %+10.2f\n", "peak memory (GiB)", base.peak_bytes / kGiB, best.peak_bytes / kGiB,
                   (best.peak_bytes - base.peak_bytes) / kGiB);
  return out;
}

std::string search_summary(const SearchResult& r) {
  std::string out = strprintf(
      "%lld candidates in %.3f s (%.0f candidates/s, %lld estimates, %d threads): %lld feasible, "
      "%lld rejected\n",
      static_cast<long long>(r.evaluated), r.elapsed_s,
      r.elapsed_s > 0 ? static_cast<double>(r.evaluated) / r.elapsed_s : 0.0,
      static_cast<long long>(r.estimate_calls), r.threads, static_cast<long long>(r.feasible),
      static_cast<long long>(r.evaluated - r.feasible));
  if (!r.rejected_by_reason.empty()) out += "  rejected: " + counts_text(r) + "\n";
  if (r.collapsed > 0)
    out += strprintf("  %lld variants within 0.5 %% of a better plan with the same sizes folded into it (+var)\n",
                     static_cast<long long>(r.collapsed));
  if (r.offloaded) out += "  nothing fits without offloading: these plans keep the optimizer states in host memory\n";
  if (!r.first_estimate_error.empty())
    out += "  first estimate error: " + r.first_estimate_error + "\n";
  return out;
}

std::string search_csv(const SearchResult& r) {
  std::string out =
      "rank,tp,cp,pp,dp,ep,etp,edp,vpp,split,mbs,mbc,zero,sp,recompute,recompute_layer_num,"
      "iteration_time_s,mfu,tflops_per_gpu,tokens_per_s_per_gpu,peak_memory_gib,fit_state,"
      "critical_stage,fwd_compute_s,bwd_compute_s,recompute_s,tp_comm_s,pp_comm_s,dp_comm_s,"
      "optimizer_s,bubble_s,stage_peak_alloc_gib,stage_peak_reserved_gib\n";
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const Candidate& c = r.candidates[i];
    const StrategyConfig& s = c.strategy;
    const StageTime& t = critical_stage(c);
    std::string alloc, reserved;
    for (const auto& st : c.stages) {
      alloc += (alloc.empty() ? "" : ";") + st.name + "=" +
               strprintf("%.4f", st.peak_alloc_bytes / kGiB);
      reserved += (reserved.empty() ? "" : ";") + st.name + "=" +
                  strprintf("%.4f", st.peak_reserved_bytes / kGiB);
    }
    out += strprintf(
        "%zu,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%s,%lld,%lld,%lld,%s,%s,%lld,"
        "%.6f,%.6f,%.4f,%.3f,%.4f,%s,%s,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%s,%s\n",
        i + 1, static_cast<long long>(s.tp_size), static_cast<long long>(s.cp_size),
        static_cast<long long>(s.pp_size), static_cast<long long>(s.dp_size()),
        static_cast<long long>(s.ep_size), static_cast<long long>(s.etp_size),
        static_cast<long long>(s.edp_size()), static_cast<long long>(vpp_of(s)),
        split_text(c).c_str(), static_cast<long long>(s.micro_batch_size),
        static_cast<long long>(s.micro_batch_num), static_cast<long long>(s.zero_state),
        s.enable_sequence_parallel ? "on" : "off", recompute_kind_name(c.recompute),
        static_cast<long long>(s.recompute_layer_num), c.iteration_time_s, c.mfu, c.tflops_per_gpu,
        c.tokens_per_s_per_gpu, c.peak_bytes / kGiB, fit_state_name(c.fit.state), t.name.c_str(), t.fwd_compute_s,
        t.bwd_compute_s, t.recompute_s, t.tp_comm_s, t.pp_comm_s, t.dp_comm_s, t.optimizer_s,
        t.bubble_s, alloc.c_str(), reserved.c_str());
  }
  return out;
}

std::string search_json(const SearchRun& run, const SearchResult& r, const std::string& command) {
  const SearchOptions& o = run.options;
  const SearchSpace full = default_search_space(run.plan.model, run.system, o.world_size, run.space, o.mode, o.base.seq_len);
  nlohmann::ordered_json j;
  j["schema_version"] = "1.0.0";
  j["provenance"] = {{"tool", "trainsim search"},
                     {"version", TRAINSIM_VERSION},
                     {"command", command},
                     {"date", utc_timestamp()}};
  nlohmann::ordered_json in;
  in["model"] = search_model_name(run);
  in["system"] = run.system.sys_name;
  in["world_size"] = o.world_size;
  in["global_batch"] = o.global_batch;
  in["seq_len"] = o.base.seq_len;
  in["rank_by"] = run.rank_by;
  in["memory"] = o.use_reserved ? "reserved" : "allocated";
  in["tight_feasible"] = o.tight;
  in["gmi_error_gib"] = r.unusable_memory_bytes / kGiB;
  in["memory_limit_gib"] = r.memory_limit_bytes / kGiB;
  in["space"] = {{"tp", full.tp},   {"pp", full.pp},     {"cp", full.cp},
                 {"ep", full.ep},   {"etp", full.etp},   {"vpp", full.vpp},
                 {"mbs", full.mbs}, {"zero", full.zero}, {"sp", full.sp},
                 {"cp_comm", full.cp_comm}, {"dispatcher", full.dispatcher}, {"a2a_overlap", full.a2a_overlap}};
  for (RecomputeKind k : full.recompute)
    in["space"]["recompute"].push_back(recompute_kind_name(k));
  j["search"] = in;
  j["evaluated"] = r.evaluated;
  j["feasible"] = r.feasible;
  j["estimate_calls"] = r.estimate_calls;
  j["elapsed_s"] = r.elapsed_s;
  j["threads"] = r.threads;
  j["rejected_by_reason"] = r.rejected_by_reason;
  if (!r.first_estimate_error.empty()) j["first_estimate_error"] = r.first_estimate_error;
  if (std::isfinite(r.time_bound_s)) j["time_bound_s"] = r.time_bound_s;
  j["collapsed"] = r.collapsed;
  j["offloaded"] = r.offloaded;
  if (r.base.evaluated) {
    nlohmann::ordered_json b = candidate_json(r.base.plan, 0);
    b.erase("rank");
    b["fits"] = r.base.fits;
    if (r.base.fits) b["rank"] = r.base.rank;
    j["base"] = b;
  } else if (!r.base.error.empty()) {
    j["base"] = {{"error", r.base.error}};
  }
  j["candidates"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < r.candidates.size(); ++i)
    j["candidates"].push_back(candidate_json(r.candidates[i], i + 1));
  // Time × memory Pareto front of the feasible plans (up to the bound), fastest first.
  j["pareto"] = nlohmann::ordered_json::array();
  for (const Candidate& c : r.pareto) {
    nlohmann::ordered_json p = candidate_json(c, 0);
    p.erase("rank");
    p.erase("stage_times");
    p.erase("stages");
    j["pareto"].push_back(p);
  }
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string search_model_name(const SearchRun& run) {
  return run.plan.model.model_name.empty() ? run.plan.model_source : run.plan.model.model_name;
}

}  // namespace trainsim
