#include "memory_probe.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "system/system_config.h"
#include "core/error.h"
#include "core/units.h"

namespace trainsim::kb {

namespace {
constexpr const char* kSchema = "trainsim.memory_probe";
constexpr int kVersion = 1;
double mib(double bytes) { return bytes / kMiB; }
}  // namespace

std::string memory_probe_json(const MemoryProbe& p) {
  nlohmann::ordered_json j;
  j["schema"] = kSchema;
  j["version"] = kVersion;
  j["device"] = p.device;
  j["context_mib"] = mib(p.context_bytes);
  j["cublas_workspace_mib"] = mib(p.cublas_workspace_bytes);
  j["cublaslt_workspace_mib"] = mib(p.cublaslt_workspace_bytes);
  j["nccl_ranks"] = p.nccl_ranks;
  j["nccl_communicator_mib"] = mib(p.nccl_communicator_bytes);
  return j.dump(1) + "\n";
}

MemoryProbe parse_memory_probe(const std::string& text, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(source, "", std::string("not JSON: ") + e.what() +
                                              "; give the file kernels_bench --memory-probe --out wrote");
  }
  if (!j.is_object() || j.value("schema", "") != kSchema)
    throw ConfigError(source, "/schema", std::string("expected \"") + kSchema +
                                                 "\"; give the file kernels_bench --memory-probe --out wrote");
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int>() != kVersion)
    throw ConfigError(source, "/version", "expected 1");
  MemoryProbe p;
  auto number = [&](const char* key) {
    if (!j.contains(key) || !j[key].is_number() || !(j[key].get<double>() >= 0))
      throw ConfigError(source, std::string("/") + key, "expected a number of MiB ≥ 0");
    return j[key].get<double>() * kMiB;
  };
  if (j.contains("device") && j["device"].is_string()) p.device = j["device"].get<std::string>();
  p.context_bytes = number("context_mib");
  p.cublas_workspace_bytes = number("cublas_workspace_mib");
  p.cublaslt_workspace_bytes = number("cublaslt_workspace_mib");
  p.nccl_communicator_bytes = number("nccl_communicator_mib");
  if (!j.contains("nccl_ranks") || !j["nccl_ranks"].is_number_integer() || j["nccl_ranks"].get<int64_t>() < 0)
    throw ConfigError(source, "/nccl_ranks", "expected an integer ≥ 0 (0: NCCL not measured)");
  p.nccl_ranks = j["nccl_ranks"].get<int64_t>();
  return p;
}

std::string apply_memory_probe(const std::string& system_text, const std::string& system_source,
                               const MemoryProbe& p) {
  nlohmann::ordered_json sys;
  try {
    sys = nlohmann::ordered_json::parse(system_text);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(system_source, "", std::string("not JSON: ") + e.what());
  }
  if (!sys.is_object() || !sys.contains("accelerator") || !sys["accelerator"].is_object())
    throw ConfigError(system_source, "/accelerator", "expected an object (the system file's accelerator); give a "
                                                       "system file such as configs/system/h100-sxm-80g.json");
  auto& acc = sys["accelerator"];
  acc["cuda_context_gbs"] = p.context_bytes / kGiB;
  acc["cublas_workspace_mib"] = std::max(p.cublas_workspace_bytes, p.cublaslt_workspace_bytes) / kMiB;
  if (p.nccl_ranks > 1) {
    int64_t channels = kDefaultNcclChannels;
    if (acc.contains("nccl_channels") && acc["nccl_channels"].is_number_integer())
      channels = acc["nccl_channels"].get<int64_t>();
    if (channels < 1) throw ConfigError(system_source, "/accelerator/nccl_channels", "expected ≥ 1");
    acc["nccl_channel_buffer_mib"] = p.nccl_communicator_bytes / static_cast<double>(channels) / kMiB;
  }
  acc.erase("unusable_mem_gbs");
  return sys.dump(1) + "\n";
}

}  // namespace trainsim::kb
