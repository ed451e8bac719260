// Merges kernels_bench measurements into a system config, the way the peer assembles its
// system file (SimuMax combine_efficiency.py, test_ce_permute_efficiency.py).
#include "calibration/kernels_merge.h"

#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "calibration/kernel_grid.h"
#include "calibration/kernels_file.h"
#include "calibration/op_class.h"
#include "calibration/shape_key.h"
#include "core/error.h"
#include "core/text.h"
#include "core/units.h"

namespace trainsim {
namespace {

// The system file's range of an efficiency factor (system_config.cpp): beyond it the merged
// file was rejected when read back, an error naming the output file instead of the kernels file.
constexpr double kMinEfficiency = kSystemMinPositive;
constexpr double kMaxEfficiency = kSystemMaxFactor;

// `formula` = its value; what to check when it is beyond the range.
void check_efficiency(double eff, const std::string& source, const std::string& path, const std::string& formula,
                      const char* check) {
  if (!(eff >= kMinEfficiency && eff <= kMaxEfficiency))
    throw ConfigError(source, path, strprintf("%s = %g is outside the system file's %g to %g: check %s", formula.c_str(),
                                              eff, kMinEfficiency, kMaxEfficiency, check));
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

// A class missing from the base starts as a copy of `default` (same latency), as the peer's
// template does.
BandwidthConfig class_or_default(const SystemConfig& sys, const std::string& name) {
  auto it = sys.bandwidths.find(name);
  if (it != sys.bandwidths.end()) return it->second;
  it = sys.bandwidths.find("default");
  return it != sys.bandwidths.end() ? it->second : BandwidthConfig{};
}

// The latency items of a kernels file: the empty kernel's launch latency (recorded only) and
// the launch floor (kernels_bench --launch-floor).
struct Floors {
  std::optional<double> launch_latency_s, eager_s, graph_s;
};

// Every memory-bound class pays the measured floor per kernel, eager (launched one by one from
// the host) and replayed from a CUDA graph; set before the efficiencies, which deduct it. Both
// or neither.
Floors apply_launch_floors(SystemConfig& sys, const KernelsDoc& doc, std::vector<std::string>& warnings) {
  Floors f;
  for (const auto& r : doc.results) {
    if (r.status != "ok" || r.kind != "latency") continue;
    if (r.op == "launch_latency") f.launch_latency_s = r.time.median;
    if (r.op == "eager_launch_floor") f.eager_s = r.time.median;
    if (r.op == "graph_launch_floor") f.graph_s = r.time.median;
  }
  if (f.eager_s.has_value() != f.graph_s.has_value())
    warnings.push_back("only one of eager_launch_floor and graph_launch_floor measured; latencies kept");
  if (f.eager_s && f.graph_s)
    for (auto& [name, bw] : sys.bandwidths) {
      bw.latency_s = *f.eager_s;
      bw.graph_latency_s = *f.graph_s;
    }
  return f;
}

}  // namespace

void merge_kernels(SystemConfig& sys, const std::string& kernels_json_text, const std::string& source) {
  KernelsDoc doc = load_kernels(kernels_json_text, source);
  std::vector<std::string> warnings;
  std::map<std::string, int64_t> status_counts;

  // Compute ops: the simulator evaluates t = flops / (peak * eff) (config.py
  // compute_op_accuracy_time), so eff = flops / (t_measured * peak) with the peak the system
  // file declares for that op; the convention cancels as long as both use the same peak.
  std::map<std::string, std::vector<double>> measured;
  for (const KernelResult& r : doc.results) {
    ++status_counts[r.status];
    if (r.kind != "compute" || r.status != "ok") continue;
    ComputeOpConfig& op = sys.ops[r.op];
    if (op.peak_flops <= 0)
      op.peak_flops = is_fp8_op(r.op) ? doc.device.peak_fp8_flops : doc.device.peak_bf16_flops;
    if (op.peak_flops <= 0)
      throw ConfigError(source, "/device",
                        "op class '" + r.op + "' is not in the base system and the measurements carry no "
                        "peak to declare for it (peak_bf16_tflops/peak_fp8_tflops)");
    double eff = r.flops / (r.time.median * op.peak_flops);
    check_efficiency(eff, source, "/results/" + std::to_string(&r - doc.results.data()),
                     strprintf("efficiency flops / (time_s.median x peak) = %g / (%g s x %g TFLOPS)", r.flops,
                               r.time.median, op.peak_flops / kTera),
                     "flops and time_s (seconds), or the op class's peak (base system, device.peak_*_tflops)");
    op.accurate.set(r.key, eff);
    op.has_accurate = true;
    measured[r.op].push_back(eff);
  }
  // combine_efficiency.py: the op fallback is the plain mean of its measured shapes; `default`
  // is the mean over the measured non-fp8, non-attention op classes.
  std::vector<double> default_parts;
  for (const auto& [name, effs] : measured) {
    sys.ops[name].efficient_factor = mean(effs);
    const std::optional<OpClass> c = find_op_class(name);
    if (c && !op_row(*c).fp8 && op_row(*c).family != OpFamily::Attention) default_parts.push_back(mean(effs));
  }
  if (!default_parts.empty()) {
    ComputeOpConfig& def = sys.ops[op_name(OpClass::Default)];
    if (def.peak_flops <= 0) def.peak_flops = doc.device.peak_bf16_flops;
    def.efficient_factor = mean(default_parts);
  }

  // Memory-bound classes: the simulator evaluates t = bytes / (gbps * eff) + latency per kernel
  // (config.py compute_mem_access_time), so over the cases of one class
  // eff = sum(bytes) / (peak * sum(t - latency * launches))  (test_ce_permute_efficiency.py).
  struct Acc {
    double bytes = 0, net_s = 0;
  };
  std::map<std::string, Acc> classes;
  std::map<std::string, std::string> first_case;  // a class's first result, for messages
  const Floors floors = apply_launch_floors(sys, doc, warnings);
  for (const KernelResult& r : doc.results) {
    if (r.status != "ok" || r.kind != "memory") continue;
    first_case.emplace(r.op, "/results/" + std::to_string(&r - doc.results.data()));
    BandwidthConfig bw = class_or_default(sys, r.op);
    double net = r.time.median - bw.latency_s * static_cast<double>(r.launches);
    if (net <= 0) {
      warnings.push_back(strprintf("%s '%s': measured %.3g us is not above the class latency x %lld "
                                   "launches; case skipped",
                                   r.op.c_str(), r.key.c_str(), r.time.median / kMicro,
                                   static_cast<long long>(r.launches)));
      continue;
    }
    classes[r.op].bytes += r.bytes;
    classes[r.op].net_s += net;
  }
  for (const auto& [name, acc] : classes) {
    BandwidthConfig bw = class_or_default(sys, name);
    if (doc.device.peak_mem_bytes_per_s > 0) bw.bytes_per_s = doc.device.peak_mem_bytes_per_s;
    if (bw.bytes_per_s <= 0)
      throw ConfigError(source, "/device/peak_mem_bandwidth_bytes_per_s",
                        "bandwidth class '" + name + "' has no peak: expected a number > 0");
    bw.efficient_factor = acc.bytes / (bw.bytes_per_s * acc.net_s);
    check_efficiency(bw.efficient_factor, source, first_case.at(name),
                     strprintf("bandwidth class '%s': efficiency bytes / (peak x time) = %g / (%g bytes/s x %g s)",
                               name.c_str(), acc.bytes, bw.bytes_per_s, acc.net_s),
                     "its results' bytes and time_s (seconds), or device.peak_mem_bandwidth_bytes_per_s");
    sys.bandwidths[name] = bw;
  }

  // A grid run (kernels_bench --grid): its compute results become the classes' models.
  const std::vector<std::string> models = merge_kernel_grid(sys, doc, source);

  // The device total (the peer rounds up to whole GiB; the exact total keeps the presets' style).
  if (doc.device.mem_bytes > 0) sys.mem_bytes = doc.device.mem_bytes;

  nlohmann::json prov = sys.provenance_json.empty() ? nlohmann::json::object()
                                                    : nlohmann::json::parse(sys.provenance_json);
  nlohmann::json k;
  k["source"] = source;
  k["gpu"] = doc.device.name;
  k["gpu_uuid"] = doc.device.uuid;
  k["compute_capability"] = doc.device.compute_capability;
  k["driver_version"] = doc.device.driver_version;
  k["cuda_runtime_version"] = doc.device.cuda_runtime_version;
  k["cublas_version"] = doc.device.cublas_version;
  k["cudnn_version"] = doc.device.cudnn_version;
  k["sm_clock_max_mhz"] = doc.device.sm_clock_max_hz / 1e6;
  k["mem_clock_mhz"] = doc.device.mem_clock_hz / 1e6;
  nlohmann::json kp = doc.provenance_json.empty() ? nlohmann::json::object()
                                                  : nlohmann::json::parse(doc.provenance_json);
  k["date"] = kp.value("date", nlohmann::json(""));
  k["command"] = kp.value("command", nlohmann::json(""));
  // The whole record too: an imported table names its source package, tables and derivations.
  k["measurement_provenance"] = kp;
  k["results"] = status_counts;
  if (floors.launch_latency_s) k["launch_latency_us"] = *floors.launch_latency_s / kMicro;
  if (floors.eager_s && floors.graph_s) {
    k["latency_us"] = *floors.eager_s / kMicro;
    k["graph_latency_us"] = *floors.graph_s / kMicro;
    k["latency_rule"] = "every memory-bound class: latency_us = eager_launch_floor, graph_latency_us = "
                        "graph_launch_floor (per kernel, kernels_bench --launch-floor)";
  }
  if (kp.contains("grid")) k["models"] = models;
  if (!warnings.empty()) k["warnings"] = warnings;
  if (!doc.method_json.empty()) k["method"] = nlohmann::json::parse(doc.method_json);
  prov["kernels"] = k;
  sys.provenance_json = prov.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  refresh_fingerprint(sys);
}

}  // namespace trainsim
