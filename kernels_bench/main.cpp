// kernels_bench: measures the GEMM, grouped GEMM, fused attention and memory-bound kernels a
// shapes.json lists, or the calibration grid of each efficiency model (--grid), and writes
// kernels.json for `trainsim system build`.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "backend.h"
#include "cli/cli_app.h"
#include "inputs/output_file.h"
#include "system/presets.h"
#include "calibration/kernel_grid.h"
#include "calibration/shapes_file.h"
#include "system/system_config.h"
#include "core/error.h"
#include "memory_probe.h"
#include "plan.h"
#include "runner.h"

namespace {

using trainsim::UsageError;

int run(const std::vector<std::string>& args) {
  CLI::App app("Measure the GEMM, grouped GEMM, attention and memory-bound kernels a shapes.json lists.",
               "kernels_bench");
  std::vector<std::string> shapes_paths;
  std::string out;
  bool dry = false, resume = false, no_memory = false, self_check = false;
  trainsim::kb::PlanOptions popt;
  int workspace_mib = 32, budget_min = 0;
  app.add_option("--shapes", shapes_paths, "shapes.json written by `trainsim shapes` (repeatable: the union is measured)");
  std::string grid_arg, dtype_arg = "bf16,fp8";
  app.add_option("--grid", grid_arg,
                 "measure the calibration grid of these model families instead of (or besides) --shapes: gemm, "
                 "grouped, attention, memory or all, comma-separated (system build fits the models from it)");
  app.add_option("--dtype", dtype_arg, "with --grid: the GEMM and grouped-GEMM dtypes, bf16, fp8 or both (default bf16,fp8)");
  app.add_flag("--self-check", self_check,
               "verify numerics of every op family and timing sanity first; stop with a report on failure");
  app.add_option("--budget-min", budget_min,
                 "stop starting new items after this many minutes (the rest is left for --resume)");
  app.add_option("--out", out, "kernels.json to write (results also stream to OUT.partial.jsonl)");
  app.add_flag("--dry-run", dry, "print the plan and the estimated run time; touch no GPU");
  app.add_flag("--resume", resume, "continue an interrupted run (reuses finished results)");
  app.add_option("--samples", popt.samples, "timed samples per item (median and spread; default 20, minimum 10)");
  app.add_option("--warmup", popt.warmup, "untimed warm-up runs per item (default 5)");
  app.add_option("--workspace-mib", workspace_mib, "cuBLASLt workspace in MiB (default 32, as TransformerEngine on Hopper)");
  app.add_flag("--no-memory", no_memory, "skip the memory-bound and launch-latency items");
  app.add_flag("--launch-floor", popt.launch_floor_only,
               "measure only the launch floor of a memory-bound kernel: a chain of tiny kernels launched eagerly "
               "and replayed from one CUDA graph (no --shapes needed; system build sets latency_us and "
               "graph_latency_us from it)");
  bool memory_probe = false;
  int nccl_ranks = 0;
  std::string probe_file, system_arg;
  app.add_flag("--memory-probe", memory_probe,
               "measure the CUDA context, the cuBLAS/cuBLASLt workspaces and (--nccl-ranks) one NCCL communicator's "
               "buffers; --out gets the result, or with --system that system file with the measured keys");
  app.add_option("--nccl-ranks", nccl_ranks, "with --memory-probe: GPUs of this process in the measured communicator "
                                             "(default 0: NCCL not measured)");
  app.add_option("--apply-memory-probe", probe_file,
                 "write a --memory-probe result file into --system's accelerator keys (no GPU needed); --out gets it");
  app.add_option("--system", system_arg, "with --memory-probe / --apply-memory-probe: the system preset or file to "
                                         "write the measured keys into");
  if (!trainsim::cli::parse_args(app, "kernels_bench", args)) return 0;
  if (memory_probe || !probe_file.empty()) {
    if (memory_probe && !probe_file.empty())
      throw UsageError("--memory-probe measures, --apply-memory-probe writes a measured file: give one");
    if (out.empty()) throw UsageError("--out is required with --memory-probe and --apply-memory-probe");
    if (!probe_file.empty() && system_arg.empty()) throw UsageError("--apply-memory-probe needs --system");
    if (nccl_ranks < 0) throw UsageError("--nccl-ranks must be ≥ 0");
    const trainsim::kb::MemoryProbe probe =
        memory_probe ? trainsim::kb::run_memory_probe(nccl_ranks)
                     : trainsim::kb::parse_memory_probe(trainsim::read_file(probe_file), probe_file);
    std::string text = trainsim::kb::memory_probe_json(probe);
    if (!system_arg.empty()) {
      const trainsim::ConfigText sys = trainsim::resolve_config("system", system_arg);
      text = trainsim::kb::apply_memory_probe(sys.text, sys.source, probe);
      (void)trainsim::load_system(text, out);  // the written file must load
    }
    trainsim::write_file_atomic(out, text);
    std::fprintf(stderr, "kernels_bench: wrote %s (context %.0f MiB, cuBLAS %.0f MiB, cuBLASLt %.0f MiB, NCCL %s)\n",
                 out.c_str(), probe.context_bytes / 1048576.0, probe.cublas_workspace_bytes / 1048576.0,
                 probe.cublaslt_workspace_bytes / 1048576.0,
                 probe.nccl_ranks > 1 ? (std::to_string(static_cast<long long>(probe.nccl_communicator_bytes / 1048576.0)) +
                                         " MiB over " + std::to_string(probe.nccl_ranks) + " ranks").c_str()
                                      : "not measured");
    return 0;
  }
  if (self_check) {
    trainsim::kb::MeasureOptions mopt;
    mopt.samples = 10;
    auto backend = trainsim::kb::make_device_backend();
    std::fprintf(stderr, "kernels_bench: self-check on %s\n", backend->device().name.c_str());
    std::vector<trainsim::kb::CheckLine> lines = backend->self_check(mopt);
    std::fputs(trainsim::kb::format_checks(lines).c_str(), stdout);
    std::fflush(stdout);
    if (!trainsim::kb::all_passed(lines))
      throw trainsim::Error("self-check failed (FAIL lines above): do not calibrate with this build or GPU until "
                            "it passes");
    if (shapes_paths.empty() && grid_arg.empty()) return 0;
  }
  std::optional<trainsim::GridSpec> grid;
  if (!grid_arg.empty()) grid = trainsim::parse_grid_spec(grid_arg, dtype_arg);
  if (shapes_paths.empty() && !grid && !popt.launch_floor_only) throw UsageError("--shapes or --grid is required");
  if (popt.launch_floor_only && grid) throw UsageError("--launch-floor measures the launch floor alone: drop --grid "
                                                       "(--grid memory measures it too)");
  if (!dry && out.empty()) throw UsageError("--out is required (or use --dry-run)");
  if (popt.launch_floor_only && no_memory) throw UsageError("--launch-floor measures launch items: drop --no-memory");
  if (popt.launch_floor_only && !shapes_paths.empty())
    throw UsageError("--launch-floor measures the launch floor alone: drop --shapes (merge both kernels files' "
                     "results with separate system build steps)");
  popt.memory = !no_memory && (!grid || grid->memory);
  if (grid) {
    popt.grid_memory = grid->memory;
    popt.item_lines = false;
  }
  if (budget_min < 0) throw UsageError("--budget-min must be ≥ 0");
  if (workspace_mib < 0) throw UsageError("--workspace-mib must be ≥ 0");

  // The grid first, then the union of the shapes files (one per model): what the grid lacks.
  trainsim::ShapesDoc shapes;
  if (grid) shapes.shapes = trainsim::grid_compute_shapes(*grid);
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& e : shapes.shapes) seen.emplace(e.op, e.key);
  for (size_t i = 0; i < shapes_paths.size(); ++i) {
    trainsim::ShapesDoc more = trainsim::load_shapes(trainsim::read_file(shapes_paths[i]), shapes_paths[i]);
    if (shapes.system.empty()) shapes.system = more.system;
    for (auto& e : more.shapes)
      if (seen.emplace(e.op, e.key).second) shapes.shapes.push_back(std::move(e));
  }
  trainsim::kb::BenchPlan plan = trainsim::kb::make_plan(shapes, popt);
  // A grid runs coarse to fine, every family's coarse grid first; without a grid, under a budget
  // the few memory-bound and latency items (seconds in all) go first: a run cut short still
  // calibrates every bandwidth class and, with a grid, every family.
  if (grid)
    trainsim::kb::order_coarse_to_fine(plan);
  else if (budget_min > 0)
    std::stable_partition(plan.items.begin(), plan.items.end(), [](const trainsim::kb::BenchItem& it) {
      return it.family == trainsim::kb::Family::Memory || it.family == trainsim::kb::Family::Latency;
    });
  if (dry) {
    std::fputs(trainsim::kb::format_plan(plan, popt).c_str(), stdout);
    return 0;
  }

  trainsim::kb::RunOptions ropt;
  ropt.measure.samples = popt.samples;
  ropt.measure.warmup = popt.warmup;
  ropt.measure.workspace_bytes = workspace_mib * 1024.0 * 1024.0;
  ropt.resume = resume;
  ropt.deadline_s = budget_min * 60.0;
  ropt.out_path = out;
  nlohmann::json prov;
  prov["tool"] = "kernels_bench";
  prov["version"] = TRAINSIM_VERSION;
  prov["command"] = trainsim::command_line("kernels_bench", args);
  prov["date"] = trainsim::utc_timestamp();
  prov["shapes_files"] = shapes_paths;
  if (!shapes.system.empty()) prov["shapes_system"] = shapes.system;
  if (grid) prov["grid"] = nlohmann::json::parse(trainsim::grid_description_json(*grid));
  ropt.provenance_json = prov.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);

  auto backend = trainsim::kb::make_device_backend();
  // The estimate with this device's peaks and L2 (the dry run assumes an H100 SXM).
  const trainsim::DeviceFacts dev = backend->device();
  if (dev.peak_bf16_flops > 0) popt.peak_bf16_flops = dev.peak_bf16_flops;
  if (dev.peak_fp8_flops > 0) popt.peak_fp8_flops = dev.peak_fp8_flops;
  if (dev.peak_mem_bytes_per_s > 0) popt.mem_bytes_per_s = dev.peak_mem_bytes_per_s;
  if (dev.l2_bytes > 0) popt.l2_bytes = dev.l2_bytes;
  plan.est_total_s = 0;
  for (auto& it : plan.items) plan.est_total_s += it.est_s = trainsim::kb::estimate_item_seconds(it, popt);
  std::fprintf(stderr, "kernels_bench: %zu items on %s (%lld SMs), estimated %s\n", plan.items.size(),
               dev.name.c_str(), static_cast<long long>(dev.sm_count),
               trainsim::kb::format_duration(plan.est_total_s).c_str());
  auto sum = trainsim::kb::run_plan(plan, *backend, ropt, stderr);
  std::fprintf(stderr, "kernels_bench: wrote %s (%lld measured: %lld ok, %lld unsupported, %lld failed; %lld reused)\n",
               ropt.out_path.c_str(), static_cast<long long>(sum.measured), static_cast<long long>(sum.ok),
               static_cast<long long>(sum.unsupported), static_cast<long long>(sum.failed),
               static_cast<long long>(sum.reused));
  if (sum.left > 0)
    std::fprintf(stderr, "kernels_bench: %lld items left by the time budget; rerun with --resume to measure them\n",
                 static_cast<long long>(sum.left));
  if (sum.failed > 0)
    std::fprintf(stderr, "kernels_bench: warning: %lld items failed (see 'reason' in %s); --resume retries them\n",
                 static_cast<long long>(sum.failed), ropt.out_path.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const int rc = run(std::vector<std::string>(argv + 1, argv + argc));
    // The plan goes to stdout: a full disk or closed pipe must not exit 0.
    if (std::fflush(stdout) != 0 || std::ferror(stdout))
      throw trainsim::Error(std::string("standard output: cannot write: ") + std::strerror(errno));
    return rc;
  } catch (const trainsim::UsageError& e) {
    std::fprintf(stderr, "kernels_bench: usage error: %s\n", e.what());
    return 2;
  } catch (const trainsim::Error& e) {
    std::fprintf(stderr, "kernels_bench: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kernels_bench: internal error: %s\n", e.what());
    return 1;
  }
}
