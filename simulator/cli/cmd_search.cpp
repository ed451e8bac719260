// `trainsim search`: the fastest strategies for a model on N GPUs that fit in device memory.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "cli/cli_app.h"
#include "cli/commands.h"
#include "cli/plan_options.h"
#include "inputs/output_file.h"
#include "core/text.h"
#include "core/units.h"
#include "search/search.h"
#include "views/predict.h"
#include "views/html_report.h"
#include "search/report.h"

namespace trainsim::cli {

int cmd_search(const Args& args) {
  CLI::App app("Find the fastest strategies for a model on N GPUs that fit in device memory.", "trainsim search");
  PlanOptions po;
  add_plan_options(app, po, {.strategy_repeatable = false, .shortcuts = false});
  SearchArgs p;
  auto opt = [&](const std::string& names, const std::string& help) {
    const std::string key = names.substr(2, names.find(',') == std::string::npos ? std::string::npos : names.find(',') - 2);
    return app.add_option(names, p.given[key], help);
  };
  opt("--system", std::string("system preset name or JSON file (default ") + kDefaultSystem + ", as perf)");
  opt("--gpus,--world-size", "world size (required unless --megatron-args gives it)");
  opt("--global-batch,--gbs", "sequences per step (required unless --megatron-args gives it); mbc = G / (dp·mbs)");
  opt("--seq", "sequence length (default: the base strategy's, else 4096)");
  app.add_option("--base-strategy", po.strategies, "same as --strategy (the strategy every candidate inherits "
                                                   "its other switches from)")->expected(1);
  opt("--top", "best candidates shown and written (default 10; 0 = every feasible one)");
  opt("--rank-by", "time (default), mfu or tokens");
  opt("--mfu", "convention of the candidates' MFU and TFLOP/s: megatron (default, as perf and Megatron-LM "
               "count them) or simumax");
  opt("--csv", "write the ranked candidates to this CSV file");
  opt("--html", "write an HTML report: step time vs memory of every feasible candidate (up to 65536; or of the "
                "--top ones when given) with the Pareto front");
  bool json = false, use_reserved = false, use_alloc = false, quiet = false;
  app.add_flag("--json", json, "print a JSON report to stdout instead of the table");
  opt("--threads", "worker threads (default: hardware concurrency)");
  opt("--gmi-error", "per-GPU memory margin in GiB, replacing each plan's memory outside PyTorch (default: "
                     "CUDA context and NCCL buffers per plan, or the system's unusable_mem_gbs when it gives one; "
                     "--compat simumax-1.2: unusable_mem_gbs, 6 unless set)");
  app.add_flag("--use-reserved", use_reserved, "compare peak reserved memory with the limit (default)");
  app.add_flag("--use-alloc", use_alloc, "compare peak allocated memory with the limit");
  app.add_flag("--no-tight", p.no_tight, "keep only plans that fit with the caching allocator's reserve (default: "
                                         "TIGHT plans too, which fit if the allocator frees its cache and retries)");
  app.add_flag("--quiet", quiet, "no progress line on stderr");
  opt("--tp", "tensor parallel sizes, e.g. 1,2,4,8 (default: powers of two up to GPUs per node; 1 for MLA)");
  opt("--pp", "pipeline sizes, e.g. 1-16 (default: 1..layers)");
  opt("--cp", "context parallel sizes (default 1)");
  opt("--ep", "expert parallel sizes (default: powers of two up to the expert count; 1 for dense)");
  opt("--etp", "expert tensor parallel sizes (default 1)");
  opt("--vpp", "virtual pipeline sizes (default 1; > 1 needs pp ≥ 2 and each stage's layers divisible by vpp; pp ≥ 3 with --compat)");
  opt("--mbs", "micro batch sizes (default 1,2,4)");
  opt("--zero", "ZeRO stages 0..3 (default 1)");
  opt("--recompute", "none, full, Megatron module sets core_attn, core_attn+mlp, mla_up_proj+mlp, moe_act, "
                     "layernorm+moe_act, moe; SimuMax's selective (= selective_all,selective_attn,selective_mlp) "
                     "(default: those that apply to the model)");
  opt("--sp", "sequence parallel: on, off or on,off (default on)");
  opt("--cp-comm", "cp_comm_type values where cp > 1: p2p, a2a, all_gather, a2a+p2p (default: all four)");
  opt("--dispatcher", "MoE token dispatchers: alltoall, allgather, deepep, hybridep, base (default: the first four)");
  opt("--a2a-overlap", "EP all-to-all overlap (overlap_moe_expert_parallel_comm): on, off or on,off (default on,off "
                       "for MoE)");
  opt("--overlaps", "on (default: every overlap Megatron runs at a candidate's sizes) or base (the base's switches)");
  bool explain = false;
  app.add_flag("--explain", explain, "after the table: the best plan's Megatron flags that differ from the base "
                                     "plan's and the time terms that moved");
  std::string compat;
  add_compat_option(app, compat);
  if (!parse_args(app, "search", args)) return 0;
  p.use_reserved = use_reserved;
  p.use_alloc = use_alloc;
  p.compat = compat;
  SearchRun run = prepare_search(po, p, [](const PlanConfigs& plan) { warn_about(plan, "search"); });
  const ModelConfig& model = run.plan.model;
  const SystemConfig& sys = run.system;
  SearchOptions& o = run.options;
  const std::string& rank = run.rank_by;

  const bool show_progress = !quiet;
  const bool tty = isatty(fileno(stderr)) != 0;
  bool progress_shown = false;
  o.progress = [&](const SearchProgress& pr) {
    if (!show_progress) return;
    progress_shown = true;
    std::fprintf(
        stderr, "%ssearch: %lld/%lld candidates (%.0f%%), %lld estimates, %.0f candidates/s%s",
        tty ? "\r" : "", static_cast<long long>(pr.done), static_cast<long long>(pr.total),
        pr.total ? 100.0 * static_cast<double>(pr.done) / static_cast<double>(pr.total) : 100.0,
        static_cast<long long>(pr.estimate_calls),
        pr.elapsed_s > 0 ? static_cast<double>(pr.done) / pr.elapsed_s : 0.0, tty ? "" : "\n");
    std::fflush(stderr);
  };
  // Without --top, the HTML scatter shows every feasible candidate; the other outputs the best 10.
  const bool plot_all = p.has("html") && !p.has("top");
  if (plot_all) o.keep = kMaxKeep;
  SearchResult r = search(model, sys, run.space, o);
  if (progress_shown && tty) std::fputs("\n", stderr);

  const std::string model_name = search_model_name(run);
  if (p.has("html"))
    write_file_atomic(p.get("html"), search_html(r, strprintf("%s on %lld GPUs", model_name.c_str(),
                                                              static_cast<long long>(o.world_size))));
  if (plot_all && r.candidates.size() > 10) r.candidates.resize(10);
  if (p.has("csv")) write_file_atomic(p.get("csv"), search_csv(r));
  if (json) {
    std::fputs(search_json(run, r, command_line("trainsim search", args)).c_str(), stdout);
    std::fputs(search_summary(r).c_str(), stderr);
    return 0;
  }
  std::printf("search: %s on %lld GPUs (%s), global batch %lld, seq %lld, ranked by %s\n",
              model_name.c_str(), static_cast<long long>(o.world_size), sys.sys_name.c_str(),
              static_cast<long long>(o.global_batch), static_cast<long long>(o.base.seq_len),
              rank.c_str());
  if (r.per_plan_non_tensor)
    std::printf("memory limit %.2f GiB per GPU less each plan's memory outside PyTorch (CUDA context, NCCL "
                "buffers; peak %s)\n\n",
                r.memory_limit_bytes / kGiB, o.use_reserved ? "reserved" : "allocated");
  else
    std::printf("memory limit %.2f GiB per GPU (%.2f GiB - %s GiB gmi error, peak %s)\n\n",
                r.memory_limit_bytes / kGiB, sys.mem_bytes / kGiB,
                format_number(r.unusable_memory_bytes / kGiB).c_str(), o.use_reserved ? "reserved" : "allocated");
  std::fputs(search_table(r).c_str(), stdout);
  std::fputs(("\n" + search_base_line(r) + search_summary(r)).c_str(), stdout);
  if (explain) std::fputs(("\n" + search_explain(r)).c_str(), stdout);
  return 0;
}

}  // namespace trainsim::cli
