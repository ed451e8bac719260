// `trainsim batch` as a library: every case of a directory estimated into CSV rows. The CLI and
// the Python module run the same code.
#include "cli/batch.h"

#include "estimate/throughput.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "inputs/plan_request.h"
#include "core/error.h"
#include "core/text.h"
#include "core/units.h"
#include "estimate/estimate.h"
#include "estimate/finite.h"

namespace trainsim {
BatchRun prepare_batch(const BatchOptions& o) {
  std::error_code ec;
  if (!std::filesystem::is_directory(o.dir, ec)) throw ConfigError(o.dir, "", "not a directory");
  BatchRun b;
  b.options = o;
  b.system_text = o.system_document ? *o.system_document : resolve_config("system", o.system);
  b.system = load_system(b.system_text.text, b.system_text.source);

  for (const auto& entry : std::filesystem::directory_iterator(o.dir)) {
    if (!entry.is_directory()) continue;
    std::string name = entry.path().filename().string();
    if (!o.match.empty() && name.find(o.match) == std::string::npos) continue;
    b.cases.push_back(name);
  }
  std::sort(b.cases.begin(), b.cases.end());
  return b;
}

BatchSummary run_batch(const BatchRun& b, const std::function<void(const std::string&)>& write,
                       const std::function<void(const std::string&)>& progress) {
  // Rows stream into the output a block of cases at a time (a write per row would put a system
  // call between two estimates).
  const std::vector<std::string>& cases = b.cases;
  const std::string& dir = b.options.dir;
  const Mode mode = b.options.mode;
  const bool keep_going = b.options.keep_going;
  const SystemConfig& sys = b.system;
  std::string rows;
  auto emit = [&](const std::string& row) { rows += row; };
  write("case,iteration_time_ms,peak_alloc_gib,first_stage_peak_alloc_gib,last_stage_peak_alloc_gib,"
       "mfu,eval_us,error\n");
  BatchSummary sum;
  sum.cases = cases.size();
  int& failed = sum.failed;
  size_t& ran = sum.ran;
  double& total_us = sum.total_us;
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
        progress(strprintf("batch: %zu/%zu cases, %.1f s\n", ci, cases.size(),
                           std::chrono::duration<double>(now - start).count()));
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
          const Plan plan = resolve_plan(l.m, l.s, sys, mode);
          Estimate e = estimate(plan, nullptr, /*events=*/false);  // the row needs no timeline events
          auto t1 = std::chrono::steady_clock::now();
          require_finite(e, {base + "model.json", base + "strategy.json", b.system_text.source});
          const double us = std::chrono::duration<double, std::micro>(t1 - t0).count();
          total_us += us;
          // MFU as perf shows it: Megatron-LM's count; SimuMax's in compat mode (its expected.csv).
          const double mfu = mode == Mode::SimuMax12 ? e.mfu : megatron_throughput(l.m, plan, sys, e).mfu;
          row = strprintf("%s,%.4f,%.4f,%.4f,%.4f,%.5f,%.1f,\n", csv_escape(name).c_str(),
                          e.iteration_time_s * 1e3, e.peak_alloc_bytes() / kGiB,
                          e.stages.front().peak_alloc_bytes / kGiB,
                          e.stages.back().peak_alloc_bytes / kGiB, mfu, us);
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
    write(rows);
    rows.clear();
  }
  return sum;
}

std::string batch_summary_line(const BatchSummary& s) {
  const size_t ok = s.ran - static_cast<size_t>(s.failed);
  return strprintf("batch: %zu cases, %d failed, %.1f us per evaluated case%s\n", s.cases, s.failed,
                   ok ? s.total_us / static_cast<double>(ok) : 0.0,
                   s.ran < s.cases ? strprintf("; stopped at the first failure, %zu not run (--keep-going runs them)",
                                               s.cases - s.ran).c_str() : "");
}

}  // namespace trainsim
