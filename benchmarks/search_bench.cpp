// Search speed: the DeepSeek-V3 search on 1,024 H100 started from the Megatron-Bridge 25.09
// command line (validation/megatron_bridge_2509_h100), the default space, top 10, as
// `trainsim search --megatron-args FILE` runs it; and a dense one (Llama 3 70B on 64 GPUs).
// Usage: build/bin/search_bench [google-benchmark flags]; docs/search.md records the figures.
#include <benchmark/benchmark.h>

#include <string>

#include "inputs/input_file.h"
#include "inputs/plan_request.h"
#include "system/presets.h"
#include "search/search.h"

namespace {

void run_search(benchmark::State& state, const trainsim::PlanConfigs& plan, int64_t gpus, int64_t batch) {
  const trainsim::SystemConfig sys =
      trainsim::load_system(trainsim::resolve_config("system", "h100-sxm-80g").text, "h100-sxm-80g");
  trainsim::SearchOptions o;
  o.base = plan.strategy;
  o.world_size = gpus;
  o.global_batch = batch;
  o.rank_base = true;
  o.threads = static_cast<int>(state.range(0));
  int64_t estimates = 0, candidates = 0;
  for (auto _ : state) {
    const trainsim::SearchResult r = trainsim::search(plan.model, sys, {}, o);
    benchmark::DoNotOptimize(r.candidates.data());
    estimates = r.estimate_calls;
    candidates = r.evaluated;
  }
  state.counters["estimates"] = static_cast<double>(estimates);
  state.counters["candidates"] = static_cast<double>(candidates);
}

void BM_SearchDeepSeekV3_1024(benchmark::State& state) {
  const std::string path =
      std::string(TRAINSIM_SOURCE_DIR) + "/validation/megatron_bridge_2509_h100/cases/mb2509_h100_deepseekv3/megatron_args.txt";
  trainsim::PlanRequest req;
  req.megatron = trainsim::ConfigText{trainsim::read_file(path), path};
  req.normalize = false;
  const trainsim::PlanConfigs plan = trainsim::build_plan(req, "", "");
  run_search(state, plan, 1024, 8192);
}

void BM_SearchLlama3_70B_64(benchmark::State& state) {
  trainsim::PlanRequest req;
  req.model = trainsim::resolve_config("model", "llama3-70b");
  req.strategy = trainsim::ConfigText{R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 1})", "(search defaults)"};
  req.normalize = false;
  const trainsim::PlanConfigs plan = trainsim::build_plan(req, "", "");
  run_search(state, plan, 64, 1024);
}

}  // namespace

BENCHMARK(BM_SearchDeepSeekV3_1024)->Arg(2)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_SearchLlama3_70B_64)->Arg(2)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK_MAIN();
