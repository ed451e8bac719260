// kernels.json: kernels_bench measurements (written by kernels_bench, read by
// `trainsim system build` through merge_kernels).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainsim {

inline constexpr const char* kKernelsSchemaVersion = "1.0.0";

/// Summary of repeated timings of one kernel (seconds).
struct SampleStats {
  int64_t n = 0;
  double median = 0, p10 = 0, p90 = 0, min = 0, max = 0, mean = 0;
  double rel_stdev = 0;  // sample standard deviation / mean
};

/// One measured item. `kind` is "compute" (op = accelerator op class, key = shape key),
/// "memory" (op = bandwidth class such as default, permute_fwd, ce_fusion; key = the case) or
/// "latency" (op = launch_latency).
struct KernelResult {
  std::string kind, op, key;
  std::string status = "ok";  // ok, unsupported (the library refused: see reason) or failed
  std::string reason;
  std::string impl;           // implementation that produced the time, e.g. cublaslt_heuristic0
  double flops = 0;           // compute: FLOP of one call (simulator convention)
  double bytes = 0;           // memory: bytes under the simulator's byte formula
  int64_t launches = 1;       // kernels per timed call (memory-bound latency accounting)
  SampleStats time;           // seconds per call
  double peak = 0;            // FLOP/s or bytes/s the `efficiency` is relative to
  double efficiency = 0;      // ideal / measured (informational; merge recomputes from time)
  std::string details_json;   // JSON object text: algo id, clocks, throttling, ...

  /// Identity used for resuming and merging: kind|op|key.
  [[nodiscard]] std::string id() const { return kind + "|" + op + "|" + key; }
};

/// The device the measurements ran on (bytes, Hz, FLOP/s; versions as reported).
struct DeviceFacts {
  std::string name, uuid, compute_capability;
  int64_t sm_count = 0;
  double mem_bytes = 0, l2_bytes = 0;
  double sm_clock_max_hz = 0, mem_clock_hz = 0;
  int64_t mem_bus_bits = 0;
  double peak_mem_bytes_per_s = 0;  // mem clock x bus width x 2 (DDR) / 8
  double peak_bf16_flops = 0, peak_fp8_flops = 0;  // dense peaks used for `efficiency`
  std::string driver_version, cuda_runtime_version, cublas_version, cudnn_version;
};

struct KernelsDoc {
  std::string schema_version = kKernelsSchemaVersion;
  DeviceFacts device;
  std::string method_json;      // JSON object text: warmup, samples, l2 policy, timing, ...
  std::string provenance_json;  // JSON object text: tool, version, command, date, shapes file
  std::vector<KernelResult> results;
};

[[nodiscard]] std::string kernels_to_json_text(const KernelsDoc& doc);

/// Parses strictly; every problem is reported in one ConfigError naming `source` and paths.
[[nodiscard]] KernelsDoc load_kernels(const std::string& text, const std::string& source);

/// One result as a single JSON line (no newline), for the append-only partial file.
[[nodiscard]] std::string kernel_result_to_json_line(const KernelResult& r);

/// Parses one result line; throws ConfigError(source, path, ...) when malformed.
[[nodiscard]] KernelResult parse_kernel_result(const std::string& line, const std::string& source,
                                               const std::string& path);

/// Header of the partial file and of kernels.json: device, method, provenance (no results).
[[nodiscard]] std::string kernels_header_to_json_line(const KernelsDoc& doc);

}  // namespace trainsim
