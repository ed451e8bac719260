// `trainsim system build`: merges kernels_bench and comm_bench measurements and measured GEMM
// grids into a base system file and writes a system JSON the simulator reads back.
// `trainsim system build --measured-system`: another system file's measured per-shape entries as
// models. `trainsim system evaluate`: leave-one-out error of a system file's efficiency models.
// `trainsim system op-classes`: the op-class table (calibration/op_class.h) as JSON, for tools.
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_app.h"
#include "cli/commands.h"
#include "calibration/comm_merge.h"
#include "calibration/kernels_merge.h"
#include "calibration/op_class.h"
#include "comm/collective.h"
#include "inputs/model_merge.h"
#include "inputs/output_file.h"
#include "system/presets.h"
#include "system/system_config.h"
#include "core/error.h"
#include "core/text.h"

namespace trainsim::cli {

namespace {

// One model's leave-one-out row: points, held-out errors (relative time errors), mean, p90 (the
// ceil(0.9·n)-th smallest error, as tools/measured error_summary) and max.
void print_held_out(const std::string& name, const char* kind, size_t points, std::vector<double> errs,
                    size_t without) {
  std::sort(errs.begin(), errs.end());
  double mean = 0;
  for (double e : errs) mean += e;
  if (!errs.empty()) mean /= static_cast<double>(errs.size());
  const auto rank = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(errs.size())));
  const double p90 = errs.empty() ? 0 : errs[std::min(errs.size(), rank) - 1];
  std::printf("  %-12s %-10s %7zu %8zu %7.2f %7.2f %7.1f%s\n", name.c_str(), kind, points, errs.size(), 100 * mean,
              100 * p90, errs.empty() ? 0.0 : 100 * errs.back(),
              without ? strprintf("  (%zu without a neighbour)", without).c_str() : "");
}

// An attention model's fitted structure (compute/attention_model.h), its terms in µs at the op's
// peak: the fixed cost, a CTA wave's, a round of P tile pairs' apart from and at d_qk + d_v = 256.
void print_structure(const AttentionFit& f, double peak_flops) {
  if (!f.fitted() || !(peak_flops > 0)) return;
  const auto us = [&](double c) { return 1e6 * c / peak_flops; };
  std::printf("    structure: P %.0f CTAs at once; fixed %.2f us, per CTA wave %.3f us, per round of P tile pairs "
              "%.3f + %.3f us at d_qk+d_v 256; fit rms %.2f %% over %zu points\n",
              f.parallel, us(f.c[0]), us(f.c[1]), us(f.c[2]), us(f.c[3]), 100 * f.rms, f.points);
}

// A message size as nccl-tests prints it: B, KiB, MiB or GiB.
std::string size_text(double bytes) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (u < 3 && bytes >= 1024) {
    bytes /= 1024;
    ++u;
  }
  return strprintf("%.3g %s", bytes, unit[u]);
}

// Mean of relative errors, in per cent (0 for none).
double mean_pct(const std::vector<double>& e) {
  double m = 0;
  for (double x : e) m += x;
  return e.empty() ? 0 : 100 * m / static_cast<double>(e.size());
}

// Collective models: every measured size predicted by its group size's curve refitted without it,
// all sizes and 1–16 MiB, beside the system's α–β formula on the same points. Then, per group size,
// the fitted α–β line and protocol regimes. Returns the number of models.
int evaluate_collectives(const SystemConfig& sys) {
  int models = 0;
  const Settings s;
  for (const auto& [net_name, net] : sys.networks)
    for (const auto& [op_name, op] : net.ops) {
      if (!op.model) continue;
      if (models++ == 0)
        std::printf("\ncollective models: held out point by point (all sizes; 1-16 MiB) against the system's alpha-beta "
                    "formula\n  %-16s %-15s %7s %8s %7s %7s %7s %10s %10s %10s\n",
                    "network", "op", "points", "held out", "mean %", "p90 %", "max %", "1-16MiB %", "a-b %",
                    "a-b 1-16 %");
      NetworkRef ref = resolve_network(sys, net_name);
      ref.models = {};
      const int ci = NetOps::index_of(op_name);
      std::vector<double> errs, mid, ab, ab_mid;
      size_t without = 0;
      for (const auto& h : op.model->leave_one_out()) {
        const bool in_mid = h.bytes >= 1 << 20 && h.bytes <= 16 << 20;
        // A size alone in its group size's curve has no neighbour to predict it from: counted
        // apart, as for the GEMM models, not as a 100 % error.
        if (!(h.predicted_s > 0)) {
          ++without;
          continue;
        }
        const double e = std::fabs(h.predicted_s / h.measured_s - 1);
        errs.push_back(e);
        if (in_mid) mid.push_back(e);
        if (ci >= 0) {
          const double t = collective_time(sys, s, ref, static_cast<Collective>(ci), h.bytes, h.n, "tp");
          ab.push_back(std::fabs(t / h.measured_s - 1));
          if (in_mid) ab_mid.push_back(ab.back());
        }
      }
      std::vector<double> sorted = errs;
      std::sort(sorted.begin(), sorted.end());
      const auto rank = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(sorted.size())));
      std::printf("  %-16s %-15s %7zu %8zu %7.2f %7.2f %7.1f %10.2f %10.2f %10.2f%s\n", net_name.c_str(),
                  op_name.c_str(), op.model->points(), errs.size(), mean_pct(errs),
                  sorted.empty() ? 0.0 : 100 * sorted[std::min(sorted.size(), rank) - 1],
                  sorted.empty() ? 0.0 : 100 * sorted.back(), mean_pct(mid), mean_pct(ab), mean_pct(ab_mid),
                  without ? strprintf("  (%zu without a neighbour)", without).c_str() : "");
    }
  if (models == 0) return 0;
  std::printf("\ncollective curves: latency floor alpha (us) and saturated bus bandwidth (GB/s) of the alpha-beta line; "
              "regimes alpha/bandwidth up to the switch size\n");
  for (const auto& [net_name, net] : sys.networks)
    for (const auto& [op_name, op] : net.ops) {
      if (!op.model) continue;
      for (const CollectiveCurve& c : op.model->curves()) {
        std::string line = strprintf("  %-16s %-15s n %-3lld %7.2f us %7.1f GB/s |", net_name.c_str(), op_name.c_str(),
                                     static_cast<long long>(c.n()), c.base().alpha_s * 1e6,
                                     c.base().beta_s_per_byte > 0 ? 1e-9 / c.base().beta_s_per_byte : 0.0);
        for (const auto& g : c.regimes()) {
          line += strprintf(" %.2f us %.1f GB/s", g.alpha_s * 1e6, g.beta_s_per_byte > 0 ? 1e-9 / g.beta_s_per_byte : 0.0);
          if (std::isfinite(g.upto_bytes)) line += strprintf(" to %s;", size_text(g.upto_bytes).c_str());
        }
        std::printf("%s\n", line.c_str());
      }
    }
  return models;
}

// `system evaluate`: every measured node of each GEMM model predicted without it; grouped-GEMM
// models point by point (`grouped`) and expert shape by shape (`grouped/sh`); --min-m is the
// tokens per expert there.
int evaluate(const std::string& system_arg, double min_m) {
  const ConfigText text = resolve_config("system", system_arg);
  const SystemConfig sys = load_system(text.text, text.source);
  std::printf("%s: leave-one-out of the efficiency models (m >= %g), relative time error |predicted/measured - 1|\n",
              text.source.c_str(), min_m);
  std::printf("  %-12s %-10s %7s %8s %7s %7s %7s\n", "op", "model", "points", "held out", "mean %", "p90 %",
              "max %");
  int models = 0;
  for (const auto& [name, op] : sys.ops) {
    if (!op.gemm_model) continue;
    ++models;
    std::vector<double> errs;
    size_t without = 0;
    for (const auto& h : op.gemm_model->leave_one_out()) {
      if (h.m < min_m) continue;
      if (h.predicted_s > 0) {
        errs.push_back(std::fabs(h.predicted_s / h.measured_s - 1));
      } else {
        ++without;
      }
    }
    print_held_out(name, "gemm_grid", op.gemm_model->points(), errs, without);
  }
  // Measured-points models: every point predicted without the points of its shape.
  for (const auto& [name, op] : sys.ops) {
    if (!op.point_model) continue;
    ++models;
    std::vector<double> errs;
    size_t without = 0;
    for (const auto& h : op.point_model->leave_one_out()) {
      if (h.predicted > 0) {
        // Time error: time ∝ 1 / efficiency.
        errs.push_back(std::fabs(h.measured / h.predicted - 1));
      } else {
        ++without;
      }
    }
    print_held_out(name, "points", op.point_model->points(), errs, without);
    print_structure(op.point_model->structure(), op.peak_flops);
  }
  // Grouped-GEMM models: every point without it (its expert shape's other token counts), and
  // without its whole expert shape (a shape the tables lack).
  for (const auto& [name, op] : sys.ops) {
    if (!op.grouped_model) continue;
    ++models;
    for (const bool series_out : {false, true}) {
      std::vector<double> errs;
      size_t without = 0;
      for (const auto& h : op.grouped_model->leave_one_out(series_out)) {
        if (h.tokens < min_m) continue;
        if (h.predicted_s > 0) {
          errs.push_back(std::fabs(h.predicted_s / h.measured_s - 1));
        } else {
          ++without;
        }
      }
      print_held_out(name, series_out ? "grouped/sh" : "grouped", op.grouped_model->points(), errs, without);
    }
  }
  if (models == 0) std::printf("  no efficiency models in this system file\n");
  evaluate_collectives(sys);
  return 0;
}

// `--out` naming one of the inputs (the same file, by device and inode: a link or another
// spelling of the path too) would replace that input with the merged system.
void check_out_is_no_input(const std::string& out, const std::vector<std::pair<std::string, std::string>>& inputs) {
  struct stat o {};
  if (::stat(out.c_str(), &o) != 0) return;
  for (const auto& [flag, path] : inputs) {
    struct stat i {};
    if (path.empty() || path == "-" || ::stat(path.c_str(), &i) != 0) continue;
    if (i.st_dev == o.st_dev && i.st_ino == o.st_ino)
      throw UsageError("system build: --out " + out + " is the " + flag + " input " + path +
                       "; writing the merged system there would replace it: give another --out file");
  }
}

// A name given more than once in a list flag is taken once (as search's value lists are), with one
// warning line: merged twice, the second pass recorded the first's result as what it replaced.
std::vector<std::string> taken_once(const std::vector<std::string>& names, const char* flag) {
  std::vector<std::string> once, repeated;
  for (const auto& n : names) {
    std::vector<std::string>& to = std::find(once.begin(), once.end(), n) == once.end() ? once : repeated;
    if (std::find(to.begin(), to.end(), n) == to.end()) to.push_back(n);
  }
  if (!repeated.empty())
    std::fprintf(stderr, "trainsim system build: warning: %s: %s given more than once; taken once\n", flag,
                 join(repeated, ", ").c_str());
  return once;
}

// The op-class table, one row per line (tools/measured/op_classes.json is a copy, checked by ctest).
int print_op_classes() {
  const auto key_name = [](KeyKind k) {
    switch (k) {
      case KeyKind::Matmul: return "matmul";
      case KeyKind::Grouped: return "grouped";
      case KeyKind::Sdpa: return "sdpa";
      case KeyKind::None: break;
    }
    return "none";
  };
  std::string out = "[\n";
  for (const OpClassRow& row : kOpClassRows) {
    nlohmann::ordered_json j;
    j["name"] = std::string(row.name);
    j["family"] = std::string(kOpFamilies.name(row.family));
    j["key"] = key_name(row.key);
    j["fp8"] = row.fp8;
    j["backward"] = row.backward;
    j["need"] = std::string(kOpNeeds.name(row.need));
    out += " " + j.dump(-1) + (&row == &kOpClassRows[kOpClassCount - 1] ? "\n" : ",\n");
  }
  out += "]\n";
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace

int cmd_system(const Args& args) {
  CLI::App app("system build: merge kernels_bench and comm_bench measurements and measured GEMM grids into a base "
               "system file; system evaluate: leave-one-out error of a system file's efficiency models; "
               "system op-classes: the op classes a system file may name, as JSON.",
               "trainsim system");
  std::string action, base_arg, kernels, comm, out, name, description, system_arg;
  std::vector<std::string> grids, grouped, measured_ops, measured_bandwidths;
  std::string measured_system, take_from;
  std::vector<std::string> take;
  double min_m = 0;
  app.add_option("ACTION", action, "build, evaluate or op-classes (print the op-class table as JSON)")
      ->required()
      ->check(CLI::IsMember({"build", "evaluate", "op-classes"}));
  app.add_option("--base", base_arg, "build: system preset or file to start from (declared peaks, networks, latencies)");
  app.add_option("--kernels", kernels, "build: kernels_bench output (kernels.json)");
  app.add_option("--comm", comm, "build: comm_bench output (comm.json)");
  app.add_option("--gemm-grid", grids, "build: measured GEMM grid (trainsim-gemm-grid JSON); fits the op's model "
                                       "(repeatable, one per op class)");
  app.add_option("--grouped-grid", grouped, "build: measured grouped-GEMM series (trainsim-grouped-grid JSON); sets the "
                                           "op's grouped-GEMM model (repeatable, one per op class)");
  app.add_option("--measured-system", measured_system,
                 "build: system file (or preset) whose measured per-shape entries (accurate_efficient_factor) "
                 "become measured-points models of the same op classes");
  app.add_option("--measured-ops", measured_ops, "build: with --measured-system, only these op classes "
                                                 "(comma-separated; default: every class it measured)")
      ->delimiter(',');
  app.add_option("--measured-bandwidths", measured_bandwidths,
                 "build: with --measured-system, take these memory-bound bandwidth classes from it (comma-separated: "
                 "default, permute_fwd, ...): its effective bandwidth and latency per launch")
      ->delimiter(',');
  app.add_option("--take-from", take_from,
                 "build: system file (or preset) of the same GPU to take the --take op classes and networks from, whole");
  app.add_option("--take", take, "build: with --take-from, the op classes (matmul, sdp_fwd, ...) and networks "
                                 "(high_intra_node, ...) to take: peak, efficiency, entries, models and curves "
                                 "(comma-separated)")
      ->delimiter(',');
  app.add_option("--out", out, "build: where to write the merged system JSON");
  app.add_option("--name", name, "build: sys_name of the result (default: the base's)");
  app.add_option("--description", description, "build: description of the result (default: the base's)");
  app.add_option("--system", system_arg, "evaluate: system preset or file whose models are held out point by point");
  app.add_option("--min-m", min_m, "evaluate: only held-out points with at least this many rows (grouped GEMM: tokens "
                                   "per expert; default 0: all)");
  if (!parse_args(app, "system", args)) return 0;
  if (action == "op-classes") return print_op_classes();
  if (action == "evaluate") {
    if (system_arg.empty()) throw UsageError("system evaluate: give --system PRESET|FILE");
    if (!(std::isfinite(min_m) && min_m >= 0))
      throw UsageError(strprintf("system evaluate: --min-m: expected a row count >= 0 (0: every held-out point), got %g",
                                 min_m));
    return evaluate(system_arg, min_m);
  }
  if (base_arg.empty()) throw UsageError("system build: --base is required");
  if (out.empty()) throw UsageError("system build: --out is required");
  if (take_from.empty() != take.empty())
    throw UsageError(take.empty() ? "system build: --take-from needs --take (the op classes and networks to take)"
                                  : "system build: --take needs --take-from (the system file to take them from)");
  if (kernels.empty() && comm.empty() && grids.empty() && grouped.empty() && measured_system.empty() &&
      take_from.empty())
    throw UsageError("system build: give --kernels, --comm, --gemm-grid, --grouped-grid, --measured-system, "
                     "--take-from or several");
  if (!measured_ops.empty() && measured_system.empty())
    throw UsageError("system build: --measured-ops needs --measured-system");
  if (!measured_bandwidths.empty() && measured_system.empty())
    throw UsageError("system build: --measured-bandwidths needs --measured-system");
  measured_ops = taken_once(measured_ops, "--measured-ops");
  measured_bandwidths = taken_once(measured_bandwidths, "--measured-bandwidths");
  take = taken_once(take, "--take");
  for (const auto& op : measured_ops)
    if (!find_op_class(op)) throw UsageError("system build: --measured-ops: " + kOpClasses.unknown(op));

  std::vector<std::pair<std::string, std::string>> inputs = {
      {"--base", base_arg}, {"--kernels", kernels}, {"--comm", comm}, {"--measured-system", measured_system},
      {"--take-from", take_from}};
  for (const auto& g : grids) inputs.emplace_back("--gemm-grid", g);
  for (const auto& g : grouped) inputs.emplace_back("--grouped-grid", g);
  check_out_is_no_input(out, inputs);

  ConfigText base = resolve_config("system", base_arg);
  SystemConfig sys = load_system(base.text, base.source);
  // Provenance of the result: this command plus what each merge adds under its own key.
  nlohmann::json prov = nlohmann::json::object();
  prov["tool"] = "trainsim system build";
  prov["version"] = TRAINSIM_VERSION;
  prov["command"] = command_line("trainsim system", args);
  prov["date"] = utc_timestamp();
  prov["base"] = base.source;
  if (!sys.provenance_json.empty()) prov["base_provenance"] = nlohmann::json::parse(sys.provenance_json);
  sys.provenance_json = prov.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (!kernels.empty()) merge_kernels(sys, read_file(kernels), kernels);
  if (!comm.empty()) merge_comm(sys, read_file(comm), comm);
  for (const auto& g : grids) merge_gemm_grid(sys, read_file(g), g);
  for (const auto& g : grouped) merge_grouped_grid(sys, read_file(g), g);
  if (!measured_system.empty()) {
    const ConfigText src = resolve_config("system", measured_system);
    const SystemConfig measured = load_system(src.text, src.source);
    const auto set = merge_measured_system(sys, measured, src.source, measured_ops);
    std::fprintf(stderr, "trainsim system build: measured-points models of %s from %s\n", join(set, ", ").c_str(),
                 src.source.c_str());
    if (!measured_bandwidths.empty())
      std::fprintf(stderr, "trainsim system build: bandwidth classes %s from %s\n",
                   join(merge_measured_bandwidths(sys, measured, src.source, measured_bandwidths), ", ").c_str(),
                   src.source.c_str());
  }
  if (!take_from.empty()) {
    const ConfigText src = resolve_config("system", take_from);
    const SystemConfig from = load_system(src.text, src.source);
    std::fprintf(stderr, "trainsim system build: took %s from %s\n",
                 join(take_from_system(sys, from, src.source, take), ", ").c_str(), src.source.c_str());
  }
  if (!name.empty()) sys.sys_name = name;
  if (!description.empty()) sys.description = description;
  if (sys.schema_version.empty()) sys.schema_version = "1.0.0";

  std::string text = system_to_json_text(sys);
  // The file must load in the simulator; a failure here is a bug in a merge, not user input.
  (void)load_system(text, out + " (merged)");
  write_file_atomic(out, text);
  std::fprintf(stderr, "trainsim system build: wrote %s\n", out.c_str());
  return 0;
}

}  // namespace trainsim::cli
