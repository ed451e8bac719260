// kernels_bench: measures the GEMM, grouped GEMM, fused attention and memory-bound kernels a
// shapes.json lists, and writes kernels.json for `trainsim system build`.
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <exception>
#include <set>

#include <nlohmann/json.hpp>

#include "backend.h"
#include "cli/args.h"
#include "config/output_file.h"
#include "config/presets.h"
#include "config/shapes_file.h"
#include "core/error.h"
#include "plan.h"
#include "runner.h"

namespace {

using trainsim::UsageError;

int int_option(const trainsim::cli::ArgParser& p, const std::string& name, int fallback) {
  if (!p.has(name)) return fallback;
  std::string v = p.get(name);
  int out = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || ptr != v.data() + v.size())
    throw UsageError("--" + name + ": expected an integer, got '" + v + "'");
  return out;
}

int run(const std::vector<std::string>& args) {
  trainsim::cli::ArgParser p(
      "kernels_bench",
      "kernels_bench --shapes shapes.json --out kernels.json [--dry-run] [--resume] [--samples N] [--warmup N]");
  p.option("shapes", "shapes.json written by `trainsim shapes` (repeatable: the union is measured)", true);
  p.option("out", "kernels.json to write (results also stream to OUT.partial.jsonl)");
  p.flag("dry-run", "print the plan and the estimated run time; touch no GPU");
  p.flag("resume", "continue an interrupted run (reuses finished results)");
  p.option("samples", "timed samples per item (median and spread; default 20, minimum 10)");
  p.option("warmup", "untimed warm-up runs per item (default 5)");
  p.option("workspace-mib", "cuBLASLt workspace in MiB (default 32, as TransformerEngine on Hopper)");
  p.flag("no-memory", "skip the memory-bound and launch-latency items");
  if (!p.parse(args)) return 0;
  if (!p.positionals().empty()) throw UsageError("unexpected argument '" + p.positionals()[0] + "'\n" + p.help());
  if (!p.has("shapes")) throw UsageError("--shapes is required\n" + p.help());
  bool dry = p.has("dry-run");
  if (!dry && !p.has("out")) throw UsageError("--out is required (or use --dry-run)\n" + p.help());

  trainsim::kb::PlanOptions popt;
  popt.samples = int_option(p, "samples", popt.samples);
  popt.warmup = int_option(p, "warmup", popt.warmup);
  popt.memory = !p.has("no-memory");
  int workspace_mib = int_option(p, "workspace-mib", 32);
  if (workspace_mib < 0) throw UsageError("--workspace-mib must be ≥ 0");

  // Several shapes files (one per model) are measured as their union.
  std::vector<std::string> shapes_paths = p.get_all("shapes");
  trainsim::ShapesDoc shapes = trainsim::load_shapes(trainsim::read_file(shapes_paths[0]), shapes_paths[0]);
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& e : shapes.shapes) seen.emplace(e.op, e.key);
  for (size_t i = 1; i < shapes_paths.size(); ++i) {
    trainsim::ShapesDoc more = trainsim::load_shapes(trainsim::read_file(shapes_paths[i]), shapes_paths[i]);
    for (auto& e : more.shapes)
      if (seen.emplace(e.op, e.key).second) shapes.shapes.push_back(std::move(e));
  }
  trainsim::kb::BenchPlan plan = trainsim::kb::make_plan(shapes, popt);
  if (dry) {
    std::fputs(trainsim::kb::format_plan(plan, popt).c_str(), stdout);
    return 0;
  }

  trainsim::kb::RunOptions ropt;
  ropt.measure.samples = popt.samples;
  ropt.measure.warmup = popt.warmup;
  ropt.measure.workspace_bytes = workspace_mib * 1024.0 * 1024.0;
  ropt.resume = p.has("resume");
  ropt.out_path = p.get("out");
  nlohmann::json prov;
  prov["tool"] = "kernels_bench";
  prov["version"] = TRAINSIM_VERSION;
  prov["command"] = trainsim::command_line("kernels_bench", args);
  prov["date"] = trainsim::utc_timestamp();
  prov["shapes_files"] = shapes_paths;
  if (!shapes.system.empty()) prov["shapes_system"] = shapes.system;
  ropt.provenance_json = prov.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);

  std::fprintf(stderr, "kernels_bench: %zu items, estimated %s\n", plan.items.size(),
               trainsim::kb::format_duration(plan.est_total_s).c_str());
  auto backend = trainsim::kb::make_device_backend();
  auto sum = trainsim::kb::run_plan(plan, *backend, ropt, stderr);
  std::fprintf(stderr, "kernels_bench: wrote %s (%lld measured: %lld ok, %lld unsupported, %lld failed; %lld reused)\n",
               ropt.out_path.c_str(), static_cast<long long>(sum.measured), static_cast<long long>(sum.ok),
               static_cast<long long>(sum.unsupported), static_cast<long long>(sum.failed),
               static_cast<long long>(sum.reused));
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
