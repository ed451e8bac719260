// `trainsim batch DIR --system Y --csv OUT.csv`: every DIR/<case>/{model,strategy}.json (or
// megatron_args.txt, with an optional config.json) in one process. A failing case records its
// error in the CSV; the batch stops there and exits 1, or with --keep-going goes on and exits 0
// when at least one case succeeded.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/cli_app.h"
#include "cli/commands.h"
#include "config/plan_request.h"
#include "config/output_file.h"
#include "config/presets.h"
#include "core/error.h"
#include "core/text.h"
#include "core/units.h"
#include "estimate/estimate.h"
#include "estimate/finite.h"

namespace trainsim::cli {
namespace {

std::string csv_escape(std::string v) {
  std::replace(v.begin(), v.end(), '\n', ' ');
  if (v.find_first_of(",\"") == std::string::npos) return v;
  std::string out = "\"";
  for (char c : v) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

int cmd_batch(const Args& args) {
  CLI::App app("Evaluate every case of a directory into a CSV.", "trainsim batch");
  std::string dir, system_arg, csv, match;
  app.add_option("DIR", dir, "directory of cases: DIR/<case>/{model,strategy}.json, or "
                             "DIR/<case>/megatron_args.txt with an optional config.json")->required();
  app.add_option("--system", system_arg, "system preset or file used for every case")->required();
  app.add_option("--csv", csv, "write the results here (default: stdout)");
  app.add_option("--match", match, "only cases whose name contains TEXT");
  bool keep_going = false;
  app.add_flag("--keep-going", keep_going, "go on after a failing case; exit 0 when at least one case succeeded");
  std::string compat;
  add_compat_option(app, compat);
  if (!parse_args(app, "batch", args)) return 0;
  const Mode mode = compat_mode(compat, "batch");
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) throw ConfigError(dir, "", "not a directory");
  ConfigText sys_text = resolve_config("system", system_arg);
  const SystemConfig sys = load_system(sys_text.text, sys_text.source);

  std::vector<std::string> cases;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_directory()) continue;
    std::string name = entry.path().filename().string();
    if (!match.empty() && name.find(match) == std::string::npos) continue;
    cases.push_back(name);
  }
  std::sort(cases.begin(), cases.end());
  // Rows stream into the output a block of cases at a time (a write per row would put a system
  // call between two estimates); a CSV file appears (atomically) at the end.
  OutputFile out(csv.empty() ? "-" : csv);
  std::string rows;
  auto emit = [&](const std::string& row) { rows += row; };
  out.write("case,iteration_time_ms,peak_alloc_gib,first_stage_peak_alloc_gib,last_stage_peak_alloc_gib,"
       "mfu,eval_us,error\n");
  int failed = 0;
  size_t ran = 0;  // cases run, including failed ones
  double total_us = 0;
  const auto start = std::chrono::steady_clock::now();
  auto last_report = start;
  // Cases are read a block at a time and then estimated back to back: reading and parsing between
  // two estimates would evict what the next estimate needs from the CPU caches. Blocks bound memory.
  constexpr size_t kBlock = 32;
  struct Loaded {
    ModelConfig m;
    StrategyConfig s;
    std::vector<NoEffect> no_effect;  // switches turned off
    std::string error;  // set when the case could not be read
  };
  std::vector<Loaded> block;
  bool stop = false;
  for (size_t first = 0; first < cases.size() && !stop; first += kBlock) {
    const size_t last = std::min(cases.size(), first + kBlock);
    block.assign(last - first, Loaded{});
    for (size_t ci = first; ci < last; ++ci) {
      // Progress on long batches (mostly file reading), at most once a second.
      const auto now = std::chrono::steady_clock::now();
      if (now - last_report > std::chrono::seconds(1)) {
        last_report = now;
        std::fprintf(stderr, "batch: %zu/%zu cases, %.1f s\n", ci, cases.size(),
                     std::chrono::duration<double>(now - start).count());
      }
      const std::string base = dir + "/" + cases[ci] + "/";
      Loaded& l = block[ci - first];
      try {
        std::error_code exists_ec;
        if (std::filesystem::exists(base + "megatron_args.txt", exists_ec)) {
          PlanRequest r;
          r.mode = mode;
          r.megatron = ConfigText{read_file(base + "megatron_args.txt"), base + "megatron_args.txt"};
          if (std::filesystem::exists(base + "config.json", exists_ec))
            r.hf_config = ConfigText{read_file(base + "config.json"), base + "config.json"};
          PlanConfigs pc = build_plan(r, "", "");
          l.m = std::move(pc.model);
          l.s = std::move(pc.strategy);
          l.no_effect = std::move(pc.no_effect);
        } else {
          l.m = load_model(read_file(base + "model.json"), base + "model.json");
          l.s = load_strategy(read_file(base + "strategy.json"), base + "strategy.json");
          l.no_effect = normalize_strategy(l.m, l.s, mode, base + "model.json");
        }
        for (const NoEffect& n : l.no_effect)
          std::fprintf(stderr, "batch: %s: warning: %s\n", cases[ci].c_str(), no_effect_line(n).c_str());
      } catch (const Error& err) {
        l.error = err.what();
      } catch (const std::exception& err) {
        l.error = std::string("internal error: ") + err.what();
      }
    }
    for (size_t ci = first; ci < last; ++ci) {
      const std::string& name = cases[ci];
      const std::string base = dir + "/" + name + "/";
      Loaded& l = block[ci - first];
      ++ran;
      std::string row, error = l.error;
      if (error.empty()) {
        try {
          auto t0 = std::chrono::steady_clock::now();
          Estimate e = estimate(l.m, l.s, sys, nullptr, mode, /*events=*/false);  // the row needs no timeline events
          auto t1 = std::chrono::steady_clock::now();
          require_finite(e, {base + "model.json", base + "strategy.json", sys_text.source});
          const double us = std::chrono::duration<double, std::micro>(t1 - t0).count();
          total_us += us;
          row = strprintf("%s,%.4f,%.4f,%.4f,%.4f,%.5f,%.1f,\n", csv_escape(name).c_str(),
                          e.iteration_time_s * 1e3, e.peak_alloc_bytes() / kGiB,
                          e.stages.front().peak_alloc_bytes / kGiB,
                          e.stages.back().peak_alloc_bytes / kGiB, e.mfu, us);
        } catch (const Error& err) {
          error = err.what();
        } catch (const std::exception& err) {
          // A bug in one case is recorded like any failure rather than losing the other rows.
          error = std::string("internal error: ") + err.what();
        }
      }
      // Written outside the try: an output error is not a case failure, it ends the command.
      if (error.empty()) {
        emit(row);
        continue;
      }
      ++failed;
      emit(csv_escape(name) + ",,,,,,," + csv_escape(error) + "\n");
      if (!keep_going) {
        stop = true;
        break;
      }
    }
    out.write(rows);
    rows.clear();
  }
  out.commit();
  const size_t ok = ran - static_cast<size_t>(failed);
  std::fprintf(stderr, "batch: %zu cases, %d failed, %.1f us per evaluated case%s\n", cases.size(), failed,
               ok ? total_us / static_cast<double>(ok) : 0.0,
               ran < cases.size() ? strprintf("; stopped at the first failure, %zu not run (--keep-going runs them)",
                                              cases.size() - ran).c_str() : "");
  if (failed == 0) return 0;
  return keep_going && ok > 0 ? 0 : 1;
}

}  // namespace trainsim::cli
