// System JSON writer (SimuMax-compatible units: `gbps` is GiB/s, latencies in µs) and the
// system's content fingerprint.
#include <cmath>
#include <string>

#include "system/system_config.h"
#include "inputs/json_reader.h"
#include "core/text.h"
#include "core/units.h"

namespace trainsim {

using nlohmann::json;

namespace {
// The system's JSON text; `models`: with the models' grids (else a placeholder per model).
std::string system_json_text(const SystemConfig& sys, int indent, bool models);
}  // namespace

void refresh_fingerprint(SystemConfig& sys) {
  sys.fingerprint = 0;
  // The models enter by their content hash, not their text (formatting a grid of 35,700 times
  // took 20 times the rest of loading a system).
  std::string text = system_json_text(sys, -1, false);
  for (const auto& [name, op] : sys.ops) {
    if (op.gemm_model) text += name + ":" + std::to_string(op.gemm_model->content_hash()) + "\n";
    if (op.grouped_model) text += name + ":" + std::to_string(op.grouped_model->content_hash()) + "\n";
  }
  // (a points model is in the text itself: a few hundred entries)
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  sys.fingerprint = h == 0 ? 1 : h;
}

namespace {

// Round to 15 significant digits so unit conversions round-trip to the numbers users wrote.
double clean(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  double mag = std::pow(10.0, 14 - static_cast<int>(std::floor(std::log10(std::fabs(v)))));
  return std::round(v * mag) / mag;
}

json bandwidth_json(const BandwidthConfig& bw) {
  json j;
  j["gbps"] = clean(bw.bytes_per_s / kGiB);
  j["efficient_factor"] = bw.efficient_factor;
  j["latency_us"] = clean(bw.latency_s / kMicro);
  if (bw.graph_latency_s) j["graph_latency_us"] = clean(*bw.graph_latency_s / kMicro);
  if (bw.has_fixed_latency) j["fixed_latency"] = clean(bw.fixed_latency_s / kMicro);
  if (!bw.fixed_latency_s_by_comm_num.empty()) {
    json m = json::object();
    for (const auto& [k, v] : bw.fixed_latency_s_by_comm_num) m[k] = clean(v / kMicro);
    j["fixed_latency_us_by_comm_num"] = m;
  }
  return j;
}

// A collective model as JSON text on one line: kind, provenance, per group size the sizes in
// bytes and the times in µs (9 significant digits).
std::string collective_model_json(const CollectiveModel& m) {
  std::string o = "{\"kind\": \"collective_curve\"";
  if (!m.provenance_json.empty()) o += ", \"provenance\": " + m.provenance_json;
  o += ", \"series\": [";
  for (size_t c = 0; c < m.curves().size(); ++c) {
    const CollectiveCurve& cv = m.curves()[c];
    o += strprintf("%s{\"n\": %lld, \"size_bytes\": [", c ? ", " : "", static_cast<long long>(cv.n()));
    for (size_t i = 0; i < cv.bytes().size(); ++i) o += strprintf(i ? ", %.17g" : "%.17g", cv.bytes()[i]);
    o += "], \"time_us\": [";
    for (size_t i = 0; i < cv.times().size(); ++i) o += strprintf(i ? ", %.9g" : "%.9g", cv.times()[i] / kMicro);
    o += "]}";
  }
  return o + "]}";
}

// A GEMM model as JSON text: kind, provenance, axes, then the times one line per m (µs, 5
// significant digits; null for a node not measured).
std::string gemm_model_json(const GemmModel& m, int indent) {
  const std::string nl = indent < 0 ? "" : "\n";
  std::string o = "{\"kind\": \"gemm_grid\"";
  if (!m.provenance_json.empty()) o += ", \"provenance\": " + m.provenance_json;
  if (m.waves().on())
    o += strprintf(", \"waves\": {\"sm_count\": %.17g, \"tile_m\": %.17g, \"tile_n\": %.17g}", m.waves().sms,
                   m.waves().tile_m, m.waves().tile_n);
  const auto axis = [&](const char* name, const std::vector<double>& v) {
    o += strprintf(", \"%s\": [", name);
    for (size_t i = 0; i < v.size(); ++i) o += strprintf(i ? ", %.17g" : "%.17g", v[i]);
    o += "]";
  };
  axis("m", m.m_axis());
  axis("n", m.n_axis());
  axis("k", m.k_axis());
  o += ", \"time_us\": [";
  for (size_t i = 0; i < m.m_axis().size(); ++i) {
    o += nl;
    for (size_t j = 0; j < m.n_axis().size(); ++j)
      for (size_t l = 0; l < m.k_axis().size(); ++l) {
        const double t = m.time_at(i, j, l);
        const bool last = i + 1 == m.m_axis().size() && j + 1 == m.n_axis().size() && l + 1 == m.k_axis().size();
        o += t > 0 ? strprintf("%.5g", t / kMicro) : std::string("null");
        if (!last) o += j + 1 == m.n_axis().size() && l + 1 == m.k_axis().size() ? "," : ", ";
      }
  }
  return o + nl + "]}";
}

// A grouped-GEMM model as JSON text: kind, provenance, then one series per line (tokens as
// given, times in µs to 5 significant digits).
std::string grouped_model_json(const GroupedModel& m, int indent) {
  const std::string nl = indent < 0 ? "" : "\n";
  std::string o = "{\"kind\": \"grouped_grid\"";
  if (!m.provenance_json.empty()) o += ", \"provenance\": " + m.provenance_json;
  o += ", \"series\": [";
  for (size_t i = 0; i < m.series().size(); ++i) {
    const GroupedSeries& s = m.series()[i];
    o += strprintf("%s%s{\"experts\": %.17g, \"hidden\": %.17g, \"inter\": %.17g, \"tokens\": [", i ? "," : "",
                   nl.c_str(), s.experts, s.hidden, s.inter);
    for (size_t p = 0; p < s.tokens.size(); ++p) o += strprintf(p ? ", %.17g" : "%.17g", s.tokens[p]);
    o += "], \"time_us\": [";
    for (size_t p = 0; p < s.time_s.size(); ++p) o += strprintf(p ? ", %.5g" : "%.5g", s.time_s[p] / kMicro);
    o += "]}";
  }
  return o + nl + "]}";
}

}  // namespace

std::string system_to_json_text(const SystemConfig& sys, int indent) { return system_json_text(sys, indent, true); }

namespace {

std::string system_json_text(const SystemConfig& sys, int indent, bool models) {
  json j;
  if (!sys.schema_version.empty()) j["schema_version"] = sys.schema_version;
  if (!sys.description.empty()) j["description"] = sys.description;
  j["sys_name"] = sys.sys_name;
  j["num_per_node"] = sys.num_per_node;
  if (sys.has_fc8) j["FC8"] = sys.fc8;
  if (sys.nvlink_domain_size) j["nvlink_domain_size"] = *sys.nvlink_domain_size;
  if (sys.straggler_jitter) j["straggler_jitter"] = *sys.straggler_jitter;
  json acc;
  acc["backend"] = sys.backend;
  acc["mem_gbs"] = clean(sys.mem_bytes / kGiB);
  if (sys.unusable_mem_given || sys.unusable_mem_bytes != kDefaultUnusableMemGiB * kGiB)
    acc["unusable_mem_gbs"] = clean(sys.unusable_mem_bytes / kGiB);
  if (sys.cuda_context_bytes != kDefaultCudaContextGiB * kGiB) acc["cuda_context_gbs"] = clean(sys.cuda_context_bytes / kGiB);
  if (sys.nccl_channels != kDefaultNcclChannels) acc["nccl_channels"] = sys.nccl_channels;
  if (sys.nccl_channel_buffer_bytes != kDefaultNcclChannelBufferMiB * kMiB)
    acc["nccl_channel_buffer_mib"] = clean(sys.nccl_channel_buffer_bytes / kMiB);
  if (sys.allocator_fragmentation != kDefaultAllocatorFragmentation)
    acc["allocator_fragmentation"] = clean(sys.allocator_fragmentation);
  if (sys.nvls_channels != kDefaultNvlsChannels) acc["nvls_channels"] = sys.nvls_channels;
  if (sys.nvls_chunk_bytes != kDefaultNvlsChunkKiB * 1024) acc["nvls_chunk_kib"] = clean(sys.nvls_chunk_bytes / 1024);
  if (sys.cublas_workspace_bytes != kDefaultCublasWorkspaceMiB * kMiB)
    acc["cublas_workspace_mib"] = clean(sys.cublas_workspace_bytes / kMiB);
  if (sys.deepep_nvl_chunk_tokens != kDefaultDeepepNvlChunkTokens) acc["deepep_nvl_chunk_tokens"] = sys.deepep_nvl_chunk_tokens;
  if (sys.deepep_rdma_chunk_tokens != kDefaultDeepepRdmaChunkTokens)
    acc["deepep_rdma_chunk_tokens"] = sys.deepep_rdma_chunk_tokens;
  if (sys.sm_count) acc["sm_count"] = *sys.sm_count;
  acc["mode"] = sys.mode == CostMode::Roofline ? "roofline" : "only_compute";
  for (const auto& [name, op] : sys.ops) {
    json o;
    o["tflops"] = clean(op.peak_flops / kTera);
    o["efficient_factor"] = op.efficient_factor;
    if (op.has_accurate || !op.accurate.empty()) {
      json a = json::object();
      for (const auto& [k, v] : op.accurate.entries()) a[k] = v;
      o["accurate_efficient_factor"] = a;
    }
    // The model's text is put in after the dump: its grid on one line per m, not per number.
    if (op.gemm_model) o["model"] = "\x01gemm_model:" + name;
    if (op.grouped_model) o["model"] = "\x01grouped_model:" + name;
    if (op.point_model) {
      json m;
      m["kind"] = "points";
      if (!op.point_model->provenance_json.empty()) m["provenance"] = json::parse(op.point_model->provenance_json);
      json pts = json::object();
      for (const auto& [key, eff] : op.point_model->entries()) pts[format_packed_key(key)] = eff;
      m["points"] = pts;
      o["model"] = m;
    }
    acc["op"][name] = o;
  }
  for (const auto& [name, bw] : sys.bandwidths) acc["bandwidth"][name] = bandwidth_json(bw);
  j["accelerator"] = acc;
  if (sys.host_link_bytes_per_s > 0 || sys.host_adam_bytes_per_s > 0 || sys.host_framework) {
    json h = {{"link_gbps", clean(sys.host_link_bytes_per_s / kGiB)},
              {"cpu_adam_gbps", clean(sys.host_adam_bytes_per_s / kGiB)}};
    if (const auto& f = sys.host_framework)
      h["framework"] = {{"eager_op_us", clean(f->eager_op_s / kMicro)},
                        {"te_module_us", clean(f->te_module_s / kMicro)},
                        {"megatron_layer_us", clean(f->megatron_layer_s / kMicro)},
                        {"collective_us", clean(f->collective_s / kMicro)},
                        {"graph_launch_us", clean(f->graph_launch_s / kMicro)},
                        {"sync_us", clean(f->sync_s / kMicro)}};
    j["host"] = h;
  }
  json nets;
  nets["intra_with_pcie"] = sys.intra_with_pcie;
  for (const auto& [name, net] : sys.networks) {
    json n;
    n["processor_usage"] = net.processor_usage;
    n["bandwidth"] = bandwidth_json(net.bandwidth);
    json ops = json::object();
    for (const auto& [cname, op] : net.ops) {
      json o;
      o["scale"] = op.scale;
      o["offset"] = op.offset;
      if (op.efficient_factor) o["efficient_factor"] = *op.efficient_factor;
      if (op.latency_s) o["latency_us"] = clean(*op.latency_s / kMicro);
      if (op.fixed_latency_s) o["fixed_latency_us"] = clean(*op.fixed_latency_s / kMicro);
      if (op.has_fixed_by_comm_num || !op.fixed_latency_s_by_comm_num.empty()) {
        json m = json::object();
        for (const auto& [k, v] : op.fixed_latency_s_by_comm_num) m[k] = clean(v / kMicro);
        o["fixed_latency_us_by_comm_num"] = m;
      }
      if (op.model) o["model"] = "\x01" "coll_model:" + name + "/" + cname;
      if (!op.dp_fixed_bw.empty()) {
        json m = json::object();
        for (const auto& [k, v] : op.dp_fixed_bw) m[k] = clean(v / kGiB);
        o["dp_fixed_bw"] = m;
      }
      ops[cname] = o;
    }
    n["op"] = ops;
    nets[name] = n;
  }
  j["networks"] = nets;
  if (!sys.provenance_json.empty()) j["provenance"] = json::parse(sys.provenance_json);
  std::string text = j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  for (const auto& [name, op] : sys.ops) {
    if ((!op.gemm_model && !op.grouped_model) || !models) continue;
    const std::string mark =
        std::string("\"\\u0001") + (op.gemm_model ? "gemm" : "grouped") + "_model:" + json(name).dump().substr(1);
    const size_t at = text.find(mark);
    if (at != std::string::npos)
      text.replace(at, mark.size(), op.gemm_model ? gemm_model_json(*op.gemm_model, indent)
                                                  : grouped_model_json(*op.grouped_model, indent));
  }
  // Collective models always (a few hundred numbers: the fingerprint hashes them as text).
  for (const auto& [name, net] : sys.networks)
    for (const auto& [cname, op] : net.ops) {
      if (!op.model) continue;
      const std::string mark = "\"\\u0001coll_model:" + name + "/" + cname + "\"";
      const size_t at = text.find(mark);
      if (at != std::string::npos) text.replace(at, mark.size(), collective_model_json(*op.model));
    }
  return text;
}

}  // namespace

}  // namespace trainsim
