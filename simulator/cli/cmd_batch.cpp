// `trainsim batch DIR --system Y --csv OUT.csv`: every DIR/<case>/{model,strategy}.json in one
// process. A failing case records its error in the CSV; the batch stops there and exits 1, or with
// --keep-going goes on and exits 0 when at least one case succeeded.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/args.h"
#include "cli/commands.h"
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
  ArgParser p("batch", "trainsim batch DIR --system Y [--csv OUT.csv] [--match TEXT] [--keep-going]");
  p.positional("DIR", "directory of cases, each DIR/<case>/{model,strategy}.json");
  p.option("system", "system preset or file used for every case");
  p.option("csv", "write the results here (default: stdout)");
  p.option("match", "only cases whose name contains TEXT");
  p.flag("keep-going", "go on after a failing case; exit 0 when at least one case succeeded");
  if (!p.parse(args)) return 0;
  if (p.positionals().size() != 1) throw UsageError("batch: expected one directory\n" + p.help());
  if (!p.has("system")) throw UsageError("batch: --system is required\n" + p.help());
  const std::string dir = p.positionals()[0];
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) throw ConfigError(dir, "", "not a directory");
  ConfigText sys_text = resolve_config("system", p.get("system"));
  const SystemConfig sys = load_system(sys_text.text, sys_text.source);

  std::vector<std::string> cases;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_directory()) continue;
    std::string name = entry.path().filename().string();
    if (p.has("match") && name.find(p.get("match")) == std::string::npos) continue;
    cases.push_back(name);
  }
  std::sort(cases.begin(), cases.end());
  // Rows stream into the output as each case finishes; a CSV file appears (atomically) at the end.
  const bool keep_going = p.has("keep-going");
  OutputFile out(p.get("csv", "-"));
  auto emit = [&](const std::string& row) { out.write(row); };
  emit("case,iteration_time_ms,peak_alloc_gib,first_stage_peak_alloc_gib,last_stage_peak_alloc_gib,"
       "mfu,eval_us,error\n");
  int failed = 0;
  size_t ran = 0;  // cases run, including failed ones
  double total_us = 0;
  const auto start = std::chrono::steady_clock::now();
  auto last_report = start;
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const std::string& name = cases[ci];
    // Progress on long batches (mostly file reading), at most once a second.
    const auto now = std::chrono::steady_clock::now();
    if (now - last_report > std::chrono::seconds(1)) {
      last_report = now;
      std::fprintf(stderr, "batch: %zu/%zu cases, %.1f s\n", ci, cases.size(),
                   std::chrono::duration<double>(now - start).count());
    }
    const std::string base = dir + "/" + name + "/";
    ++ran;
    std::string row, error;
    try {
      ModelConfig m = load_model(read_file(base + "model.json"), base + "model.json");
      StrategyConfig s = load_strategy(read_file(base + "strategy.json"), base + "strategy.json");
      auto t0 = std::chrono::steady_clock::now();
      Estimate e = estimate(m, s, sys);
      require_finite(e, {base + "model.json", base + "strategy.json", sys_text.source});
      auto t1 = std::chrono::steady_clock::now();
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
    // Written outside the try: an output error is not a case failure, it ends the command.
    if (error.empty()) {
      emit(row);
      continue;
    }
    ++failed;
    emit(csv_escape(name) + ",,,,,,," + csv_escape(error) + "\n");
    if (!keep_going) break;
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
