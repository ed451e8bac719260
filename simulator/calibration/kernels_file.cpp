// kernels.json reader and writer.
#include "calibration/kernels_file.h"

#include <algorithm>
#include <map>

#include "inputs/json_reader.h"
#include "inputs/schema_version.h"
#include "calibration/shape_key.h"
#include "compute/gemm_model.h"
#include "system/system_config.h"
#include "core/text.h"
#include "core/units.h"

namespace trainsim {
namespace {

using nlohmann::json;

constexpr double kMega = 1e6;
const std::vector<std::string> kKinds = {"compute", "memory", "latency"};
const std::vector<std::string> kStatuses = {"ok", "unsupported", "failed"};

// Plausibility of the measured numbers, the system file's ranges (system_config.cpp): a peak of
// 1e-6 to 1e6 TFLOPS or GiB/s, a device of at most 1e6 GiB; a result's time of kModelMinTimeS
// to kModelMaxTimeS (1 ns to 1000 s, the system file's bound on latencies), its bytes at most
// kModelMaxBytes and its FLOP at most the largest rate for the longest time. Beyond them the
// merge wrote a system file the reader rejects (an error naming the merged output, not this
// file) or, for a negative device memory, ignored the number without a word.
constexpr double kMaxRate = kSystemMaxRate;       // TFLOPS, GiB/s
constexpr double kMinRate = kSystemMinPositive;   // TFLOPS, GiB/s
constexpr double kMaxMemGiB = kSystemMaxRate;     // GiB, the bound of the file's GiB figures
constexpr double kMaxResultFlops = kMaxRate * kTera * kModelMaxTimeS;

// A rate that is 0 (not given) or in [kMinRate, kMaxRate] `unit`s; `v` in those units.
void check_rate(IssueList& issues, const std::string& path, double v, const char* unit) {
  if (v == 0 || (v >= kMinRate && v <= kMaxRate)) return;
  issues.add(path, strprintf("must be 0 (not measured) or from %g to %g %s (the system file's range), got %s",
                             kMinRate, kMaxRate, unit, format_number(v).c_str()));
}

json device_json(const DeviceFacts& d) {
  return {{"name", d.name},
          {"uuid", d.uuid},
          {"compute_capability", d.compute_capability},
          {"sm_count", d.sm_count},
          {"mem_bytes", d.mem_bytes},
          {"l2_bytes", d.l2_bytes},
          {"sm_clock_max_mhz", d.sm_clock_max_hz / kMega},
          {"mem_clock_mhz", d.mem_clock_hz / kMega},
          {"mem_bus_bits", d.mem_bus_bits},
          {"peak_mem_bandwidth_bytes_per_s", d.peak_mem_bytes_per_s},
          {"peak_bf16_tflops", d.peak_bf16_flops / kTera},
          {"peak_fp8_tflops", d.peak_fp8_flops / kTera},
          {"driver_version", d.driver_version},
          {"cuda_runtime_version", d.cuda_runtime_version},
          {"cublas_version", d.cublas_version},
          {"cudnn_version", d.cudnn_version}};
}

void read_device(const json& j, IssueList& issues, DeviceFacts& d) {
  ObjectReader r(j, "/device", issues);
  double sm_mhz = 0, mem_mhz = 0, bf16 = 0, fp8 = 0;
  r.req("name", d.name);
  r.opt("uuid", d.uuid);
  r.opt("compute_capability", d.compute_capability);
  r.opt("sm_count", d.sm_count);
  r.opt("mem_bytes", d.mem_bytes);
  r.opt("l2_bytes", d.l2_bytes);
  r.opt("sm_clock_max_mhz", sm_mhz);
  r.opt("mem_clock_mhz", mem_mhz);
  r.opt("mem_bus_bits", d.mem_bus_bits);
  r.opt("peak_mem_bandwidth_bytes_per_s", d.peak_mem_bytes_per_s);
  r.opt("peak_bf16_tflops", bf16);
  r.opt("peak_fp8_tflops", fp8);
  r.opt("driver_version", d.driver_version);
  r.opt("cuda_runtime_version", d.cuda_runtime_version);
  r.opt("cublas_version", d.cublas_version);
  r.opt("cudnn_version", d.cudnn_version);
  r.finish();
  check_rate(issues, "/device/peak_bf16_tflops", bf16, "TFLOPS");
  check_rate(issues, "/device/peak_fp8_tflops", fp8, "TFLOPS");
  if (d.peak_mem_bytes_per_s != 0 &&
      !(d.peak_mem_bytes_per_s >= kMinRate * kGiB && d.peak_mem_bytes_per_s <= kMaxRate * kGiB))
    issues.add("/device/peak_mem_bandwidth_bytes_per_s",
               strprintf("must be 0 (not measured) or from %g to %g bytes/s (the system file's gbps range, %g to %g "
                         "GiB/s), got %s",
                         kMinRate * kGiB, kMaxRate * kGiB, kMinRate, kMaxRate,
                         format_number(d.peak_mem_bytes_per_s).c_str()));
  if (!(d.mem_bytes >= 0 && d.mem_bytes <= kMaxMemGiB * kGiB))
    issues.add("/device/mem_bytes", strprintf("must be 0 (not measured) or a device memory of at most %g bytes (the "
                                              "system file's %g GiB), got %s",
                                              kMaxMemGiB * kGiB, kMaxMemGiB, format_number(d.mem_bytes).c_str()));
  d.sm_clock_max_hz = sm_mhz * kMega;
  d.mem_clock_hz = mem_mhz * kMega;
  d.peak_bf16_flops = bf16 * kTera;
  d.peak_fp8_flops = fp8 * kTera;
}

json result_json(const KernelResult& r) {
  json j;
  j["kind"] = r.kind;
  j["op"] = r.op;
  j["key"] = r.key;
  j["status"] = r.status;
  if (!r.reason.empty()) j["reason"] = r.reason;
  if (!r.impl.empty()) j["impl"] = r.impl;
  if (r.flops > 0) j["flops"] = r.flops;
  if (r.bytes > 0) j["bytes"] = r.bytes;
  j["launches"] = r.launches;
  if (r.time.n > 0) {
    const SampleStats& t = r.time;
    j["time_s"] = {{"n", t.n},     {"median", t.median}, {"p10", t.p10},   {"p90", t.p90},
                   {"min", t.min}, {"max", t.max},       {"mean", t.mean}, {"rel_stdev", t.rel_stdev}};
  }
  if (r.peak > 0) j["peak"] = r.peak;
  if (r.status == "ok" && r.kind != "latency") j["efficiency"] = r.efficiency;
  if (!r.details_json.empty()) j["details"] = json::parse(r.details_json);
  return j;
}

KernelResult read_result(const json& j, const std::string& path, IssueList& issues,
                         const std::string& source) {
  KernelResult r;
  ObjectReader rd(j, path, issues);
  rd.req("kind", r.kind);
  rd.req("op", r.op);
  rd.req("key", r.key);
  rd.req("status", r.status);
  rd.opt("reason", r.reason);
  rd.opt("impl", r.impl);
  rd.opt("flops", r.flops);
  rd.opt("bytes", r.bytes);
  rd.opt("launches", r.launches);
  rd.opt("peak", r.peak);
  rd.opt("efficiency", r.efficiency);
  if (const json* t = rd.object("time_s", false)) {
    ObjectReader tr(*t, path + "/time_s", issues);
    tr.req("n", r.time.n);
    tr.req("median", r.time.median);
    tr.opt("p10", r.time.p10);
    tr.opt("p90", r.time.p90);
    tr.opt("min", r.time.min);
    tr.opt("max", r.time.max);
    tr.opt("mean", r.time.mean);
    tr.opt("rel_stdev", r.time.rel_stdev);
    tr.finish();
  }
  if (const json* d = rd.object("details", false)) r.details_json = d->dump();
  rd.finish();
  if (!r.kind.empty() && std::find(kKinds.begin(), kKinds.end(), r.kind) == kKinds.end())
    issues.add(path + "/kind", "expected one of compute, memory, latency, got '" + r.kind + "'");
  if (!r.status.empty() && std::find(kStatuses.begin(), kStatuses.end(), r.status) == kStatuses.end())
    issues.add(path + "/status", "expected one of ok, unsupported, failed, got '" + r.status + "'");
  if (r.kind == "compute" && !r.op.empty() && !r.key.empty()) {
    try {
      (void)parse_shape_key(r.op, r.key, source, path + "/key");
    } catch (const ConfigError& e) {
      for (const auto& is : e.issues()) issues.add(is.path, is.message);
    }
  }
  if (r.status == "ok") {
    if (r.time.n < 1 || r.time.median <= 0)
      issues.add(path + "/time_s", "an 'ok' result needs time_s with n ≥ 1 and median > 0");
    if (r.kind == "compute" && r.flops <= 0) issues.add(path + "/flops", "an 'ok' compute result needs flops > 0");
    if (r.kind == "memory" && r.bytes <= 0) issues.add(path + "/bytes", "an 'ok' memory result needs bytes > 0");
    if (r.time.median > 0 && !(r.time.median >= kModelMinTimeS && r.time.median <= kModelMaxTimeS))
      issues.add(path + "/time_s/median", strprintf("must be from %g to %g s (1 ns to 1000 s), got %s; check the units "
                                                    "(seconds)",
                                                    kModelMinTimeS, kModelMaxTimeS, format_number(r.time.median).c_str()));
  }
  if (r.flops > kMaxResultFlops)
    issues.add(path + "/flops", strprintf("must be at most %g (%g TFLOPS for %g s), got %s", kMaxResultFlops, kMaxRate,
                                          kModelMaxTimeS, format_number(r.flops).c_str()));
  if (r.bytes > kModelMaxBytes)
    issues.add(path + "/bytes", strprintf("must be at most %g (2^50, 1 PiB), got %s", kModelMaxBytes,
                                          format_number(r.bytes).c_str()));
  if (r.launches < 1) issues.add(path + "/launches", "must be ≥ 1");
  return r;
}

json header_json(const KernelsDoc& doc) {
  json j;
  j["schema_version"] = doc.schema_version;
  j["kind"] = "trainsim-kernels";
  j["flops_convention"] =
      "simulator: GEMM 2*b*m*n*k; grouped 2*ng*M*N*K; SDPA fwd 2*B*S^2*max(h,h_kv)*(d_qk+d_v), "
      "bwd 2.5x fwd; no causal halving (causal kernels can exceed efficiency 1)";
  j["device"] = device_json(doc.device);
  j["method"] = doc.method_json.empty() ? json::object() : json::parse(doc.method_json);
  j["provenance"] = doc.provenance_json.empty() ? json::object() : json::parse(doc.provenance_json);
  return j;
}

}  // namespace

std::string kernels_header_to_json_line(const KernelsDoc& doc) { return header_json(doc).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

std::string kernels_to_json_text(const KernelsDoc& doc) {
  json j = header_json(doc);
  j["results"] = json::array();
  for (const auto& r : doc.results) j["results"].push_back(result_json(r));
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string kernel_result_to_json_line(const KernelResult& r) { return result_json(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

KernelResult parse_kernel_result(const std::string& line, const std::string& source,
                                 const std::string& path) {
  json j = parse_json(line, source);
  IssueList issues(source);
  KernelResult r = read_result(j, path, issues, source);
  issues.throw_if_any();
  return r;
}

KernelsDoc load_kernels(const std::string& text, const std::string& source) {
  json doc = parse_json(text, source);
  IssueList issues(source);
  KernelsDoc out;
  ObjectReader top(doc, "", issues);
  top.req("schema_version", out.schema_version);
  check_schema_major(doc, "1", issues);
  std::string kind;
  top.req("kind", kind);
  if (!kind.empty() && kind != "trainsim-kernels")
    issues.add("/kind", "expected 'trainsim-kernels', got '" + kind + "' (is this a kernels_bench output?)");
  top.ignore("flops_convention");
  if (const json* d = top.object("device", true)) read_device(*d, issues, out.device);
  if (const json* m = top.object("method", false)) out.method_json = m->dump();
  if (const json* p = top.object("provenance", false)) out.provenance_json = p->dump();
  top.ignore("results");
  if (doc.is_object()) {
    auto it = doc.find("results");
    if (it == doc.end() || !it->is_array()) {
      issues.add("/results", "expected an array of results");
    } else {
      std::map<std::string, size_t> seen;
      for (size_t i = 0; i < it->size(); ++i) {
        std::string path = "/results/" + std::to_string(i);
        KernelResult r = read_result((*it)[i], path, issues, source);
        auto [prev, fresh] = seen.emplace(r.id(), i);
        if (!fresh) issues.add(path, "duplicate of /results/" + std::to_string(prev->second));
        out.results.push_back(std::move(r));
      }
    }
  }
  top.finish();
  issues.throw_if_any();
  return out;
}

}  // namespace trainsim
