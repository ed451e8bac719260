// Estimate speed on the 128 golden cases (tests/data/golden): one benchmark per case in one
// process, as `trainsim batch` runs them, then the median over cases. Usage:
//   build/bin/estimate_bench [--golden DIR] [google-benchmark flags]
//   build/bin/estimate_bench --calls N: N cold estimates of every case, no timing (a fixed amount
//   of work, for instruction counts under valgrind --tool=callgrind)
//   build/bin/estimate_bench --rotate N: N rounds over the cases in turn, each estimate timed alone:
//   every estimate follows a different case, so caches and branch predictors are as cold as in
//   `trainsim batch` (the benchmarks above repeat one case, which warms them for it)
// Also the scaling benchmarks: one pipeline plan (llama3-70b, tp8-pp8-dp4-zero1 on h100-sxm-80g,
// default mode) over 64, 1,024 and 16,384 micro-batches, whose time per estimate stays flat.
// And predict/: one whole prediction from preset names as `trainsim perf` and the Python module run
// it (the figure a Python call is compared with in docs/python.md).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "system/presets.h"
#include "estimate/estimate.h"
#include "views/predict.h"

namespace {

struct Case {
  std::string name;
  trainsim::ModelConfig m;
  trainsim::StrategyConfig s;
  const trainsim::SystemConfig* sys;
};

// One estimate as the command line runs it: the plan resolved from the inputs, then estimated
// without timeline events.
trainsim::Estimate resolve_and_estimate(const Case& c, trainsim::EstimateCache* cache, trainsim::Mode mode) {
  return trainsim::estimate(cache != nullptr ? trainsim::keyed_plan(c.m, c.s, *c.sys, mode)
                                             : trainsim::resolve_plan(c.m, c.s, *c.sys, mode),
                            cache, false);
}

// Collects each case's CPU time per iteration for the median.
class MedianReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs) {
      const std::string name = r.benchmark_name();
      if (r.run_type == Run::RT_Iteration && name.rfind("scaling/", 0) != 0 && name.rfind("predict/", 0) != 0)
        (name.rfind("cached/", 0) == 0 ? cached_us : cpu_us).push_back(r.GetAdjustedCPUTime());
    }
    ConsoleReporter::ReportRuns(runs);
  }
  std::vector<double> cpu_us, cached_us;
};

void print_median(const char* what, std::vector<double>& t) {
  if (t.empty()) return;
  std::sort(t.begin(), t.end());
  std::printf("%s: %zu golden cases, CPU time per estimate: median %.1f us, min %.1f us, max %.1f us\n", what,
              t.size(), t[t.size() / 2], t.front(), t.back());
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = std::string(TRAINSIM_SOURCE_DIR) + "/tests/data/golden";
  std::vector<char*> rest;
  int calls = 0, rotate = 0;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--golden") == 0 && i + 1 < argc) {
      dir = argv[++i];
      continue;
    }
    if (std::strcmp(argv[i], "--calls") == 0 && i + 1 < argc) {
      calls = std::atoi(argv[++i]);
      continue;
    }
    if (std::strcmp(argv[i], "--rotate") == 0 && i + 1 < argc) {
      rotate = std::atoi(argv[++i]);
      continue;
    }
    rest.push_back(argv[i]);
  }
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  try {
    std::map<std::string, trainsim::SystemConfig> systems;
    std::vector<Case> cases;
    std::deque<Case> scaling;  // registered benchmarks keep pointers into it
    std::ifstream csv(dir + "/expected.csv");
    if (!csv) throw trainsim::Error("cannot read " + dir + "/expected.csv");
    std::string line;
    std::getline(csv, line);
    while (std::getline(csv, line)) {
      std::stringstream ss(line);
      std::string name, system;
      std::getline(ss, name, ',');
      std::getline(ss, system, ',');
      if (!systems.count(system)) {
        const std::string path = dir + "/systems/" + system + ".json";
        systems.emplace(system, trainsim::load_system(trainsim::read_file(path), path));
      }
      const std::string base = dir + "/cases/" + name + "/";
      cases.push_back({name, trainsim::load_model(trainsim::read_file(base + "model.json"), base + "model.json"),
                       trainsim::load_strategy(trainsim::read_file(base + "strategy.json"), base + "strategy.json"),
                       &systems.at(system)});
    }
    if (calls > 0) {
      for (int k = 0; k < calls; ++k)
        for (const Case& c : cases)
          benchmark::DoNotOptimize(resolve_and_estimate(c, nullptr, trainsim::Mode::SimuMax12));
      std::printf("%d cold estimates of %zu golden cases\n", calls, cases.size());
      return 0;
    }
    if (rotate > 0) {
      // The figure is a median of the timings: none without cases.
      if (cases.empty()) throw trainsim::Error("--rotate: no cases in " + dir + "/expected.csv");
      std::vector<double> us;
      us.reserve(static_cast<size_t>(rotate) * cases.size());
      for (int k = 0; k < rotate; ++k)
        for (const Case& c : cases) {
          const auto t0 = std::chrono::steady_clock::now();
          benchmark::DoNotOptimize(resolve_and_estimate(c, nullptr, trainsim::Mode::SimuMax12));
          us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
        }
      std::sort(us.begin(), us.end());
      std::printf("estimate, cases in turn: %zu estimates (%d rounds of %zu golden cases), wall time per "
                  "estimate: median %.1f us, quartiles %.1f / %.1f us\n", us.size(), rotate, cases.size(),
                  us[us.size() / 2], us[us.size() / 4], us[us.size() * 3 / 4]);
      return 0;
    }
    for (const Case& c : cases)
      benchmark::RegisterBenchmark(c.name.c_str(), [&c](benchmark::State& st) {
        for (auto _ : st)
          benchmark::DoNotOptimize(resolve_and_estimate(c, nullptr, trainsim::Mode::SimuMax12));
      })->Unit(benchmark::kMicrosecond);
    // The same estimates with warm chunk results (as the search's candidates sharing chunks):
    // what the schedule engine, memory and the rest cost without the op graph.
    for (const Case& c : cases)
      benchmark::RegisterBenchmark(("cached/" + c.name).c_str(), [&c](benchmark::State& st) {
        trainsim::EstimateCache cache;
        (void)resolve_and_estimate(c, &cache, trainsim::Mode::SimuMax12);
        for (auto _ : st)
          benchmark::DoNotOptimize(resolve_and_estimate(c, &cache, trainsim::Mode::SimuMax12));
      })->Unit(benchmark::kMicrosecond);
    // Pipeline cost against micro-batches: cold (chunks evaluated) and with warm chunk results.
    static const trainsim::SystemConfig h100 = [] {
      const trainsim::ConfigText t = trainsim::resolve_config("system", "h100-sxm-80g");
      return trainsim::load_system(t.text, t.source);
    }();
    for (int64_t mbc : {64, 1024, 16384}) {
      const trainsim::ConfigText mt = trainsim::resolve_config("model", "llama3-70b");
      const trainsim::ConfigText st = trainsim::resolve_config("strategy", "tp8-pp8-dp4-zero1");
      Case& c = scaling.emplace_back(Case{"llama3-70b/tp8-pp8-dp4-zero1/mbc:" + std::to_string(mbc),
                                          trainsim::load_model(mt.text, mt.source),
                                          trainsim::load_strategy(st.text, st.source), &h100});
      c.s.micro_batch_num = mbc;
    }
    for (const Case& c : scaling) {
      benchmark::RegisterBenchmark(("scaling/" + c.name).c_str(), [&c](benchmark::State& st) {
        for (auto _ : st)
          benchmark::DoNotOptimize(resolve_and_estimate(c, nullptr, trainsim::Mode::Default));
      })->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(("scaling/cached/" + c.name).c_str(), [&c](benchmark::State& st) {
        trainsim::EstimateCache cache;
        (void)resolve_and_estimate(c, &cache, trainsim::Mode::Default);
        for (auto _ : st)
          benchmark::DoNotOptimize(resolve_and_estimate(c, &cache, trainsim::Mode::Default));
      })->Unit(benchmark::kMicrosecond);
    }
    // One whole prediction from preset names, as `trainsim perf` and the Python module's
    // trainsim.perf() run it (views/predict.h): request, plan, system, estimate with its timeline
    // events. The in-process C++ figure that a Python call is compared with (docs/python.md).
    benchmark::RegisterBenchmark("predict/llama3-8b/tp2-pp2-dp2-zero1/h100-sxm-80g", [](benchmark::State& st) {
      trainsim::PlanArgs a;
      a.model = "llama3-8b";
      a.strategies = {"tp2-pp2-dp2-zero1"};
      const trainsim::ConfigText sys = trainsim::resolve_config("system", "h100-sxm-80g");
      for (auto _ : st)
        benchmark::DoNotOptimize(trainsim::predict(trainsim::make_request(a), "", "", sys,
                                                   trainsim::MfuConvention::Megatron, trainsim::Mode::Default));
    })->Unit(benchmark::kMicrosecond);
    MedianReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    print_median("estimate", reporter.cpu_us);
    print_median("estimate with warm chunk cache", reporter.cached_us);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "estimate_bench: %s\n", e.what());
    return 1;
  }
  benchmark::Shutdown();
  return 0;
}
