// Sweep planning and run-time estimate.
#include "plan.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "calibration/kernel_grid.h"
#include "calibration/op_class.h"
#include "core/error.h"
#include "core/text.h"
#include "timing_loop.h"

namespace trainsim::kb {
namespace {

// Per-sample cost besides the kernel: L2 flush (a read of twice the L2) and the event sync.
double per_sample_overhead_s(const PlanOptions& opt) {
  return static_cast<double>(l2_flush_bytes(static_cast<size_t>(opt.l2_bytes))) / opt.mem_bytes_per_s + 20e-6;
}

// Typical efficiencies used only to estimate run time.
constexpr double kGuessGemmEff = 0.6, kGuessGroupedEff = 0.4, kGuessSdpaEff = 0.5, kGuessMemEff = 0.8;
constexpr double kGuessLaunchS = 4e-6;   // per empty-kernel launch
constexpr int kLaunchesPerLatencySample = 1000;
constexpr int kMaxRuns = 1000000;  // per item; keeps the plan's run time finite

// The bench that measures op class `op`'s shapes, by the class's family (calibration/op_class.h).
Family family_of(const std::string& op) {
  const std::optional<OpClass> c = find_op_class(op);
  switch (c ? op_row(*c).family : OpFamily::Fallback) {
    case OpFamily::Gemm: return Family::Gemm;
    case OpFamily::GroupedGemm: return Family::GroupedGemm;
    case OpFamily::Attention: return op_row(*c).backward ? Family::SdpaBwd : Family::SdpaFwd;
    case OpFamily::Fallback: break;
  }
  throw UsageError("op class '" + op + "' has no shape keys to measure; valid values: " + join(keyed_ops()));
}

const char* family_name(Family f) {
  switch (f) {
    case Family::Gemm: return "gemm";
    case Family::GroupedGemm: return "grouped";
    case Family::SdpaFwd: return "sdpa_fwd";
    case Family::SdpaBwd: return "sdpa_bwd";
    case Family::Memory: return "memory";
    case Family::Latency: return "latency";
  }
  return "?";
}

// Setup plus the timed and warm-up runs of one item.
double runs_seconds(const BenchItem& item, const PlanOptions& opt, double runs, double overhead) {
  double peak = is_fp8_op(item.op) ? opt.peak_fp8_flops : opt.peak_bf16_flops;
  switch (item.family) {
    case Family::Gemm: return 0.05 + runs * (item.flops / (peak * kGuessGemmEff) + overhead);
    case Family::GroupedGemm: return 0.1 + runs * (item.flops / (peak * kGuessGroupedEff) + overhead);
    case Family::SdpaFwd:
    case Family::SdpaBwd: return 1.0 + runs * (item.flops / (peak * kGuessSdpaEff) + overhead);
    case Family::Memory:
      return 0.2 + runs * (item.bytes / (opt.mem_bytes_per_s * kGuessMemEff) + item.launches * kGuessLaunchS + overhead);
    case Family::Latency: return 0.1 + runs * (kLaunchesPerLatencySample * kGuessLaunchS + overhead);
  }
  return 0;
}

}  // namespace

std::vector<MemoryCase> memory_cases() {
  std::vector<MemoryCase> out;
  MemoryCase copy;
  copy.pattern = "copy";
  copy.copy_bytes = 1024.0 * 1024 * 1024;  // >> L2 on every current GPU
  out.push_back(copy);
  // DeepSeek-V2 (ds236) and V3 (ds671) MoE permutation shapes of test_ce_permute_efficiency.py.
  for (const char* pattern : {"permute_fwd", "permute_bwd"}) {
    for (auto [hidden, topk] : {std::pair<int64_t, int64_t>{5120, 6}, {7168, 8}}) {
      MemoryCase c;
      c.pattern = pattern;
      c.tokens = 4096;
      c.hidden = hidden;
      c.topk = topk;
      out.push_back(c);
    }
  }
  for (int64_t vocab : {32128, 128256}) {
    MemoryCase c;
    c.pattern = "ce_fusion";
    c.tokens = 4096;
    c.vocab = vocab;
    out.push_back(c);
  }
  MemoryCase launch;
  launch.pattern = "launch";
  out.push_back(launch);
  return out;
}

// The launch floor of a memory-bound kernel, eager and replayed from a CUDA graph (--launch-floor).
std::vector<MemoryCase> launch_floor_cases() {
  std::vector<MemoryCase> out;
  for (const char* pattern : {"launch_chain_eager", "launch_chain_graph"}) {
    MemoryCase c;
    c.pattern = pattern;
    out.push_back(c);
  }
  return out;
}

std::vector<MemoryCase> grid_memory_cases() {
  std::vector<MemoryCase> out;
  for (double bytes : kGridCopyBytes) {
    MemoryCase copy;
    copy.pattern = "copy";
    copy.copy_bytes = bytes;
    out.push_back(copy);
  }
  for (double tokens : kGridMemTokens) {
    for (const MemoryCase& fixed : memory_cases()) {
      if (fixed.pattern != "permute_fwd" && fixed.pattern != "permute_bwd" && fixed.pattern != "ce_fusion") continue;
      MemoryCase c = fixed;
      c.tokens = static_cast<int64_t>(tokens);
      out.push_back(c);
    }
  }
  MemoryCase launch;
  launch.pattern = "launch";
  out.push_back(launch);
  for (const MemoryCase& c : launch_floor_cases()) out.push_back(c);
  return out;
}

double memory_case_bytes(const MemoryCase& c) {
  auto d = [](int64_t v) { return static_cast<double>(v); };
  double e = d(c.elem_bytes);
  if (c.pattern == "copy") return 2 * c.copy_bytes;  // read + write
  if (c.pattern == "permute_fwd" || c.pattern == "permute_bwd") {
    // Permutation: (T*H + P*H)*e + 2*P*H*e; UnPermutation: 2*P*H*e + (P*H + T*H)*e; P = k*T.
    double th = d(c.tokens) * d(c.hidden), ph = d(c.tokens) * d(c.topk) * d(c.hidden);
    return (th + 3 * ph) * e;
  }
  if (c.pattern == "ce_fusion") {
    // ParallelCE fused: 2*logits*e + 4*B*S per pass, forward and backward.
    return 2 * (2 * d(c.tokens) * d(c.vocab) * e + 4 * d(c.tokens));
  }
  return 0;
}

int memory_case_launches(const MemoryCase& c) {
  if (c.pattern == "copy" || c.pattern.rfind("launch", 0) == 0) return 1;
  return 2;  // two kernels per permutation direction; CE forward + backward
}

std::string memory_case_key(const MemoryCase& c) {
  if (c.pattern == "copy") return strprintf("bytes=%.0f", c.copy_bytes);
  if (c.pattern == "ce_fusion")
    return strprintf("tokens=%lld, vocab=%lld", static_cast<long long>(c.tokens), static_cast<long long>(c.vocab));
  if (c.pattern == "launch") return "empty_kernel";
  if (c.pattern.rfind("launch_chain", 0) == 0) return "fill_4kib_x256";
  return strprintf("tokens=%lld, hidden=%lld, topk=%lld", static_cast<long long>(c.tokens),
                   static_cast<long long>(c.hidden), static_cast<long long>(c.topk));
}

std::string memory_case_class(const MemoryCase& c) { return c.pattern == "copy" ? "default" : c.pattern; }

double estimate_item_seconds(const BenchItem& item, const PlanOptions& opt) {
  double runs = opt.warmup + opt.samples;
  double overhead = per_sample_overhead_s(opt);
  // Every item first keeps the GPU busy for min_warmup_s (clock ramp, timing_loop.h).
  return opt.min_warmup_s + runs_seconds(item, opt, runs, overhead);
}

BenchPlan make_plan(const ShapesDoc& shapes, const PlanOptions& opt) {
  if (opt.samples < 10)
    throw UsageError(strprintf("--samples %d: need at least 10 samples for a median with spread", opt.samples));
  if (opt.warmup < 1) throw UsageError(strprintf("--warmup %d: need at least 1 warm-up run", opt.warmup));
  if (opt.samples > kMaxRuns || opt.warmup > kMaxRuns)
    throw UsageError(strprintf("--samples %d / --warmup %d: at most %d each", opt.samples, opt.warmup, kMaxRuns));
  BenchPlan plan;
  for (const auto& s : shapes.shapes) {
    if (opt.launch_floor_only) break;
    BenchItem it;
    it.family = family_of(s.op);
    it.kind = "compute";
    it.op = s.op;
    it.key = s.key;
    it.shape = s.shape;
    it.flops = s.flops;
    plan.items.push_back(std::move(it));
  }
  if (opt.memory) {
    const std::vector<MemoryCase> cases = opt.launch_floor_only ? launch_floor_cases()
                                          : opt.grid_memory     ? grid_memory_cases()
                                                                : memory_cases();
    for (const auto& c : cases) {
      const bool chain = c.pattern.rfind("launch_chain", 0) == 0;
      BenchItem it;
      bool launch = c.pattern.rfind("launch", 0) == 0;
      it.family = launch ? Family::Latency : Family::Memory;
      it.kind = launch ? "latency" : "memory";
      it.op = !launch ? memory_case_class(c)
              : chain ? (c.pattern == "launch_chain_eager" ? "eager_launch_floor" : "graph_launch_floor")
                      : "launch_latency";
      it.key = memory_case_key(c);
      it.mem = c;
      it.bytes = memory_case_bytes(c);
      it.launches = memory_case_launches(c);
      plan.items.push_back(std::move(it));
    }
  }
  for (auto& it : plan.items) {
    it.est_s = estimate_item_seconds(it, opt);
    plan.est_total_s += it.est_s;
  }
  return plan;
}

namespace {

// Steps of a grid run's order (order_coarse_to_fine).
int order_rank(const BenchItem& it) {
  if (it.family == Family::Memory || it.family == Family::Latency) return 0;
  if (it.level == 0) return 1;
  if (it.level < 0) return 2;
  return 2 + it.level;
}

const char* rank_name(int rank) {
  switch (rank) {
    case 0: return "memory-bound and latency items";
    case 1: return "grid level 0 (every 4th value of each axis)";
    case 2: return "the shapes files' shapes off the grid";
    case 3: return "grid level 1 (every 2nd value)";
    default: return "grid level 2 (the rest)";
  }
}

}  // namespace

void order_coarse_to_fine(BenchPlan& plan) {
  for (auto& it : plan.items)
    if (it.shape) it.level = grid_level(*it.shape);
  std::stable_sort(plan.items.begin(), plan.items.end(),
                   [](const BenchItem& a, const BenchItem& b) { return order_rank(a) < order_rank(b); });
}

std::string format_duration(double seconds) {
  if (seconds > 0 && seconds < 0.5) return "<1s";
  // llround is undefined beyond the long long range (it printed -9223372036854775808 s).
  if (!std::isfinite(seconds)) return "unbounded";
  if (seconds >= 1e9) return strprintf("%.3g years", seconds / (365.25 * 86400));
  auto s = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  if (s >= 3600) return strprintf("%lldh%02lldm%02llds", s / 3600, s / 60 % 60, s % 60);
  if (s >= 60) return strprintf("%lldm%02llds", s / 60, s % 60);
  return strprintf("%llds", s);
}

std::string format_plan(const BenchPlan& plan, const PlanOptions& opt) {
  std::map<std::string, int> counts;
  for (const auto& it : plan.items) ++counts[it.op];
  std::vector<std::string> parts;
  for (const auto& [op, n] : counts) parts.push_back(op + " " + std::to_string(n));
  std::string out = strprintf("kernels_bench plan: %zu items (%s)\n", plan.items.size(), join(parts).c_str());
  if (opt.item_lines) out += strprintf("%5s  %-9s %-16s %-14s %9s  %s\n", "#", "family", "op", "work", "est", "key");
  for (size_t i = 0; opt.item_lines && i < plan.items.size(); ++i) {
    const auto& it = plan.items[i];
    std::string work = it.flops > 0   ? strprintf("%.3g GFLOP", it.flops / 1e9)
                       : it.bytes > 0 ? strprintf("%.3g GB", it.bytes / 1e9)
                                      : std::string("-");
    out += strprintf("%5zu  %-9s %-16s %-14s %9s  %s\n", i + 1, family_name(it.family), it.op.c_str(),
                     work.c_str(), format_duration(it.est_s).c_str(), it.key.c_str());
  }
  // Per family, in plan order: items and estimated time.
  std::vector<std::string> order;
  std::map<std::string, std::pair<size_t, double>> families;
  for (const auto& it : plan.items) {
    const std::string f = family_name(it.family);
    if (!families.count(f)) order.push_back(f);
    ++families[f].first;
    families[f].second += it.est_s;
  }
  for (const auto& f : order)
    out += strprintf("  %-9s %6zu items %9s\n", f.c_str(), families[f].first, format_duration(families[f].second).c_str());
  // A grid run: its steps in run order, each with the time elapsed at its end.
  if (std::any_of(plan.items.begin(), plan.items.end(), [](const BenchItem& it) { return it.level >= 0; })) {
    std::map<int, std::pair<size_t, double>> steps;
    for (const auto& it : plan.items) {
      ++steps[order_rank(it)].first;
      steps[order_rank(it)].second += it.est_s;
    }
    double elapsed = 0;
    out += "in run order (a run cut short has measured the steps before it):\n";
    for (const auto& [rank, step] : steps) {
      elapsed += step.second;
      out += strprintf("  %-44s %6zu items %9s, done after %s\n", rank_name(rank), step.first,
                       format_duration(step.second).c_str(), format_duration(elapsed).c_str());
    }
  }
  out += strprintf(
      "estimated run time: %s (warm-up %d + %d samples per item; assumes %.0f/%.0f TFLOPS bf16/fp8, %.0f GB/s "
      "and typical efficiencies)\n",
      format_duration(plan.est_total_s).c_str(), opt.warmup, opt.samples, opt.peak_bf16_flops / 1e12,
      opt.peak_fp8_flops / 1e12, opt.mem_bytes_per_s / 1e9);
  return out;
}

}  // namespace trainsim::kb
