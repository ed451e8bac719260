// System JSON reader (SimuMax-compatible; `gbps` is GiB/s, latencies in µs); the writer is system_writer.cpp.
#include "system/system_config.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "inputs/json_reader.h"
#include "system/grouped_model_reader.h"
#include "core/text.h"
#include "core/units.h"

namespace trainsim {
namespace {

using nlohmann::json;

// Plausibility ranges of system numbers (system_config.h).
constexpr double kMaxRate = kSystemMaxRate;
constexpr double kMaxFactor = kSystemMaxFactor;
constexpr double kMinPositive = kSystemMinPositive;
constexpr double kMaxLatencyUs = kSystemMaxLatencyUs;

void check_magnitude(IssueList& issues, const std::string& path, double v, double max, double min_positive = 0) {
  if (v > max || v < -max)
    issues.add(path, "must be at most " + format_number(max) + " in magnitude, got " + format_number(v));
  else if (v > 0 && v < min_positive)
    issues.add(path, "must be 0 or at least " + format_number(min_positive) + ", got " + format_number(v));
}

void read_bandwidth(const json& j, const std::string& path, IssueList& issues, BandwidthConfig& bw,
                    bool gbps_required, bool memory_class = false) {
  ObjectReader r(j, path, issues);
  double gbps = 0, lat_us = 0, fixed_us = 0;
  std::optional<double> graph_us;
  if (memory_class) r.opt("graph_latency_us", graph_us);
  if (gbps_required) {
    r.req("gbps", gbps);
  } else {
    r.opt("gbps", gbps);
  }
  r.opt("efficient_factor", bw.efficient_factor);
  r.opt("latency_us", lat_us);
  bw.has_fixed_latency = r.has("fixed_latency");
  r.opt("fixed_latency", fixed_us);
  std::map<std::string, double> by_num;
  r.opt("fixed_latency_us_by_comm_num", by_num);
  r.finish();
  if (!(gbps > 0) && gbps_required) issues.add(path + "/gbps", "must be > 0");
  if (!(bw.efficient_factor > 0)) issues.add(path + "/efficient_factor", "must be > 0");
  if (lat_us < 0) issues.add(path + "/latency_us", "must be ≥ 0");
  if (fixed_us < 0) issues.add(path + "/fixed_latency", "must be ≥ 0");
  if (graph_us && *graph_us < 0) issues.add(path + "/graph_latency_us", "must be ≥ 0");
  if (graph_us) check_magnitude(issues, path + "/graph_latency_us", *graph_us, kMaxLatencyUs);
  if (graph_us) bw.graph_latency_s = *graph_us * kMicro;
  check_magnitude(issues, path + "/gbps", gbps, kMaxRate, kMinPositive);
  check_magnitude(issues, path + "/efficient_factor", bw.efficient_factor, kMaxFactor, kMinPositive);
  check_magnitude(issues, path + "/latency_us", lat_us, kMaxLatencyUs);
  check_magnitude(issues, path + "/fixed_latency", fixed_us, kMaxLatencyUs);
  for (const auto& [k, v] : by_num)
    check_magnitude(issues, path + "/fixed_latency_us_by_comm_num/" + k, v, kMaxLatencyUs);
  bw.bytes_per_s = gbps * kGiB;
  bw.latency_s = lat_us * kMicro;
  bw.fixed_latency_s = fixed_us * kMicro;
  for (const auto& [k, v] : by_num) bw.fixed_latency_s_by_comm_num[k] = v * kMicro;
}

void read_net_op(const json& j, const std::string& path, IssueList& issues, NetOpConfig& op) {
  ObjectReader r(j, path, issues);
  r.opt("scale", op.scale);
  r.opt("offset", op.offset);
  r.opt("efficient_factor", op.efficient_factor);
  std::optional<double> lat, fixed;
  r.opt("latency_us", lat);
  r.opt("fixed_latency_us", fixed);
  if (lat) op.latency_s = *lat * kMicro;
  if (fixed) op.fixed_latency_s = *fixed * kMicro;
  std::map<std::string, double> by_num, dp_bw;
  op.has_fixed_by_comm_num = r.has("fixed_latency_us_by_comm_num");
  r.opt("fixed_latency_us_by_comm_num", by_num);
  r.opt("dp_fixed_bw", dp_bw);
  r.ignore("model");  // read_collective_model
  r.finish();
  for (const auto& [k, v] : by_num) op.fixed_latency_s_by_comm_num[k] = v * kMicro;
  for (const auto& [k, v] : dp_bw) op.dp_fixed_bw[k] = v * kGiB;
  if (op.efficient_factor && !(*op.efficient_factor > 0))
    issues.add(path + "/efficient_factor", "must be > 0");
  if (!(op.scale > 0)) issues.add(path + "/scale", "must be > 0");
  if (lat && *lat < 0) issues.add(path + "/latency_us", "must be ≥ 0");
  if (fixed && *fixed < 0) issues.add(path + "/fixed_latency_us", "must be ≥ 0");
  for (const auto& [k, v] : dp_bw)
    if (!(v > 0)) issues.add(path + "/dp_fixed_bw/" + k, "must be > 0");
  check_magnitude(issues, path + "/scale", op.scale, kMaxFactor, kMinPositive);
  check_magnitude(issues, path + "/offset", op.offset, kMaxLatencyUs);
  if (op.efficient_factor)
    check_magnitude(issues, path + "/efficient_factor", *op.efficient_factor, kMaxFactor, kMinPositive);
  if (lat) check_magnitude(issues, path + "/latency_us", *lat, kMaxLatencyUs);
  if (fixed) check_magnitude(issues, path + "/fixed_latency_us", *fixed, kMaxLatencyUs);
  for (const auto& [k, v] : by_num)
    check_magnitude(issues, path + "/fixed_latency_us_by_comm_num/" + k, v, kMaxLatencyUs);
  for (const auto& [k, v] : dp_bw) check_magnitude(issues, path + "/dp_fixed_bw/" + k, v, kMaxRate, kMinPositive);
}

// Numbers of a model array (`what`: which values are allowed), null where `holes`.
bool read_numbers(const json& j, const std::string& path, IssueList& issues, bool holes, std::vector<double>& out) {
  if (!j.is_array()) {
    issues.add(path, "expected an array of numbers");
    return false;
  }
  out.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    const json& v = j[i];
    if (holes && v.is_null()) {
      out.push_back(0);
      continue;
    }
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>())) {
      issues.add(path + "/" + std::to_string(i),
                 std::string("expected a number > 0") + (holes ? " or null (not measured)" : "") + ", got " + v.dump());
      return false;
    }
    out.push_back(v.get<double>());
  }
  return true;
}

// `networks.<group>.op.<op>.model`: measured times of the collective (comm/collective_model.h),
// {"kind": "collective_curve", "provenance": {...}, "series": [{"n", "size_bytes", "time_us"}]}.
std::shared_ptr<const CollectiveModel> read_collective_model(const json& j, const std::string& path,
                                                             const NetOpConfig& op, IssueList& issues) {
  ObjectReader r(j, path, issues);
  std::string kind;
  r.req("kind", kind);
  std::string provenance;
  if (const json* prov = r.object("provenance", false)) provenance = prov->dump();
  const json* series = r.has("series") ? &j["series"] : nullptr;
  r.ignore("series");
  r.finish();
  if (kind != "collective_curve") {
    issues.add(path + "/kind", "unknown collective model kind '" + kind + "'; valid values: collective_curve");
    return nullptr;
  }
  if (!series || !series->is_array() || series->empty()) {
    issues.add(path + "/series", "expected a non-empty array of {n, size_bytes, time_us}");
    return nullptr;
  }
  std::vector<CollectivePoint> points;
  for (size_t i = 0; i < series->size(); ++i) {
    const std::string sp = path + "/series/" + std::to_string(i);
    ObjectReader rs((*series)[i], sp, issues);
    int64_t n = 0;
    rs.req("n", n);
    rs.ignore("size_bytes");
    rs.ignore("time_us");
    rs.finish();
    std::vector<double> bytes, time_us;
    if (!(*series)[i].is_object() || !read_numbers((*series)[i].value("size_bytes", json()), sp + "/size_bytes", issues,
                                                   false, bytes) ||
        !read_numbers((*series)[i].value("time_us", json()), sp + "/time_us", issues, false, time_us))
      return nullptr;
    if (bytes.size() != time_us.size()) {
      issues.add(sp, strprintf("size_bytes has %zu values, time_us %zu: one time per size", bytes.size(), time_us.size()));
      return nullptr;
    }
    if (n < 2) {
      issues.add(sp + "/n", "must be ≥ 2 (the group size), got " + std::to_string(n));
      return nullptr;
    }
    for (size_t k = 0; k < bytes.size(); ++k) points.push_back({n, bytes[k], time_us[k] * kMicro});
  }
  try {
    auto model = std::make_shared<CollectiveModel>(op.scale, op.offset, std::move(points));
    model->provenance_json = provenance;
    return model;
  } catch (const std::invalid_argument& e) {
    issues.add(path + "/series", e.what());
    return nullptr;
  }
}

// `accelerator.op.<op>.model` of kind points: measured per-shape efficiencies
// (compute/point_model.h), keys as in accurate_efficient_factor.
std::shared_ptr<const PointModel> read_point_model(const json& j, const std::string& path, OpClass cls,
                                                   IssueList& issues) {
  const std::string op(op_name(cls));
  ObjectReader r(j, path, issues);
  std::string kind;
  r.req("kind", kind);
  std::map<std::string, double> entries;
  if (!r.has("points")) issues.add(path + "/points", "required object is missing ({shape key: efficiency})");
  r.opt("points", entries);
  std::string provenance;
  if (const json* prov = r.object("provenance", false)) provenance = prov->dump();
  r.finish();
  const KeyKind kk = op_row(cls).key;
  if (kk == KeyKind::None) {
    issues.add(path, "a points model answers shape keys: only the op classes matmul, fp8_matmul, group_matmul, "
                     "fp8_group_matmul, sdp_fwd and sdp_bwd carry one, not '" + op + "'");
    return nullptr;
  }
  std::vector<std::pair<PackedKey, double>> points;
  for (const auto& [text, eff] : entries) {
    const std::optional<PackedKey> key = pack_shape_key(text);
    if (!key || key->kind != kk) {
      issues.add(path + "/points/" + text, std::string("not a ") + point_family_name(kk) + " shape key of op class '" +
                                               op + "' (the format of accurate_efficient_factor)");
      return nullptr;
    }
    if (!(eff > 0) || !std::isfinite(eff)) {
      issues.add(path + "/points/" + text, "efficiency must be a number > 0");
      return nullptr;
    }
    points.emplace_back(*key, eff);
  }
  if (points.empty()) {
    issues.add(path + "/points", "expected at least one measured shape");
    return nullptr;
  }
  try {
    auto model = std::make_shared<PointModel>(kk, std::move(points));
    model->provenance_json = provenance;
    return model;
  } catch (const std::invalid_argument& e) {
    issues.add(path, e.what());
    return nullptr;
  }
}

// `accelerator.op.<op>.model`: a GEMM grid (compute/gemm_model.h).
std::shared_ptr<const GemmModel> read_gemm_model(const json& j, const std::string& path, OpClass cls,
                                                 IssueList& issues) {
  const std::string op(op_name(cls));
  ObjectReader r(j, path, issues);
  std::string kind;
  r.req("kind", kind);
  std::vector<double> axes[3], times;
  bool ok = kind == "gemm_grid";
  if (!kind.empty() && !ok) issues.add(path + "/kind", "unknown model kind '" + kind + "'; valid values: gemm_grid, grouped_grid, points");
  if (ok && op_row(cls).family != OpFamily::Gemm)
    issues.add(path, "a gemm_grid model answers dense GEMM shape keys: only the op classes matmul and fp8_matmul "
                     "carry one, not '" + op + "'");
  const char* names[3] = {"m", "n", "k"};
  for (int a = 0; a < 3; ++a) {
    r.ignore(names[a]);
    if (!j.contains(names[a])) {
      issues.add(path + "/" + names[a], "required array is missing (grid axis, increasing)");
      ok = false;
    } else {
      ok = read_numbers(j[names[a]], path + "/" + names[a], issues, false, axes[a]) && ok;
    }
  }
  r.ignore("time_us");
  if (!j.contains("time_us")) {
    issues.add(path + "/time_us", "required array is missing (µs per node, m-major, then n, then k; null: not measured)");
    ok = false;
  } else {
    ok = read_numbers(j["time_us"], path + "/time_us", issues, true, times) && ok;
  }
  std::string provenance;
  if (const json* prov = r.object("provenance", false)) provenance = prov->dump();
  GemmWaves waves;
  if (const json* w = r.object("waves", false)) {
    ObjectReader wr(*w, path + "/waves", issues);
    wr.req("sm_count", waves.sms);
    wr.req("tile_m", waves.tile_m);
    wr.req("tile_n", waves.tile_n);
    wr.finish();
  }
  r.finish();
  if (!ok) return nullptr;
  if (std::none_of(times.begin(), times.end(), [](double t) { return t > 0; })) {
    issues.add(path + "/time_us", "no measured node: every time is null; expected at least one time in µs");
    return nullptr;
  }
  for (double& t : times) t *= kMicro;
  try {
    auto model = std::make_shared<GemmModel>(std::move(axes[0]), std::move(axes[1]), std::move(axes[2]), std::move(times));
    model->set_waves(waves);
    model->provenance_json = provenance;
    return model;
  } catch (const std::invalid_argument& e) {
    issues.add(path, e.what());
    return nullptr;
  }
}

// host: the link to host memory, the CPU Adam's rate and the framework's costs per op kind.
void read_host(const json* host, SystemConfig& sys, IssueList& issues) {
  ObjectReader h(*host, "/host", issues);
  double link_gbps = 0, adam_gbps = 0;
  h.opt("link_gbps", link_gbps);
  h.opt("cpu_adam_gbps", adam_gbps);
  if (const json* fw = h.object("framework", false)) {
    ObjectReader f(*fw, "/host/framework", issues);
    HostFramework hf;
    const std::pair<const char*, double HostFramework::*> keys[] = {
        {"eager_op_us", &HostFramework::eager_op_s},   {"te_module_us", &HostFramework::te_module_s},
        {"megatron_layer_us", &HostFramework::megatron_layer_s}, {"collective_us", &HostFramework::collective_s},
        {"graph_launch_us", &HostFramework::graph_launch_s},     {"sync_us", &HostFramework::sync_s}};
    for (const auto& [key, field] : keys) {
      double us = 0;
      f.req(key, us);
      if (!(us >= 0 && us <= 1e6))
        issues.add(std::string("/host/framework/") + key, "must be in [0, 1e6] µs, got " + format_number(us));
      hf.*field = us * kMicro;
    }
    f.finish();
    sys.host_framework = hf;
  }
  h.finish();
  for (const auto& [key, v] : {std::pair<const char*, double>{"link_gbps", link_gbps}, {"cpu_adam_gbps", adam_gbps}}) {
    if (!(v >= 0)) issues.add(std::string("/host/") + key, "must be ≥ 0");
    check_magnitude(issues, std::string("/host/") + key, v, kMaxRate, kMinPositive);
  }
  sys.host_link_bytes_per_s = link_gbps * kGiB;
  sys.host_adam_bytes_per_s = adam_gbps * kGiB;
}

// The accelerator's memory outside the tensors: CUDA context, NCCL and NVLS buffers, library
// workspaces, DeepEP slots and the caching allocator's reserve (memory/non_tensor.h).
void read_memory_terms(ObjectReader& a, double mem_gbs, SystemConfig& sys, IssueList& issues) {
  double unusable_gbs = kDefaultUnusableMemGiB;
  a.opt("unusable_mem_gbs", unusable_gbs);
  sys.unusable_mem_bytes = unusable_gbs * kGiB;
  sys.unusable_mem_given = a.has("unusable_mem_gbs");
  double context_gbs = kDefaultCudaContextGiB, channel_mib = kDefaultNcclChannelBufferMiB;
  a.opt("cuda_context_gbs", context_gbs);
  a.opt("nccl_channels", sys.nccl_channels);
  a.opt("nccl_channel_buffer_mib", channel_mib);
  a.opt("allocator_fragmentation", sys.allocator_fragmentation);
  sys.cuda_context_bytes = context_gbs * kGiB;
  sys.nccl_channel_buffer_bytes = channel_mib * kMiB;
  if (!(context_gbs >= 0 && context_gbs < 1e4))
    issues.add("/accelerator/cuda_context_gbs", "must be in [0, 10000) GiB (a CUDA context takes about 0.5)");
  if (!(sys.nccl_channels >= 1 && sys.nccl_channels <= 64))
    issues.add("/accelerator/nccl_channels", strprintf("must be in 1..64 (NCCL's ring channels; at most 32 in NCCL 2.x), "
                                                       "got %lld", static_cast<long long>(sys.nccl_channels)));
  if (!(channel_mib >= 0 && channel_mib < 1e4))
    issues.add("/accelerator/nccl_channel_buffer_mib", "must be in [0, 10000) MiB (NCCL's defaults: 9.1875)");
  double nvls_kib = kDefaultNvlsChunkKiB, workspace_mib = kDefaultCublasWorkspaceMiB;
  a.opt("nvls_channels", sys.nvls_channels);
  a.opt("nvls_chunk_kib", nvls_kib);
  a.opt("cublas_workspace_mib", workspace_mib);
  a.opt("deepep_nvl_chunk_tokens", sys.deepep_nvl_chunk_tokens);
  a.opt("deepep_rdma_chunk_tokens", sys.deepep_rdma_chunk_tokens);
  sys.nvls_chunk_bytes = nvls_kib * 1024;
  sys.cublas_workspace_bytes = workspace_mib * kMiB;
  if (!(sys.nvls_channels >= 0 && sys.nvls_channels <= 64))
    issues.add("/accelerator/nvls_channels",
               strprintf("must be in 0..64 (NVLS channels per communicator, 0 = NVLS off; NCCL's default 16), got %lld",
                         static_cast<long long>(sys.nvls_channels)));
  if (!(nvls_kib >= 0 && nvls_kib < 1e6))
    issues.add("/accelerator/nvls_chunk_kib", "must be in [0, 1000000) KiB (NCCL_NVLS_CHUNKSIZE; default 128)");
  if (!(workspace_mib >= 0 && workspace_mib < 1e5))
    issues.add("/accelerator/cublas_workspace_mib", "must be in [0, 100000) MiB (a GEMM workspace; 32 on sm90+)");
  for (const auto& [key, v] : {std::pair<const char*, int64_t>{"deepep_nvl_chunk_tokens", sys.deepep_nvl_chunk_tokens},
                               {"deepep_rdma_chunk_tokens", sys.deepep_rdma_chunk_tokens}})
    if (!(v >= 0 && v <= (1 << 20)))
      issues.add(std::string("/accelerator/") + key,
                 strprintf("must be in 0..1048576 (DeepEP receive slots per channel and peer), got %lld",
                           static_cast<long long>(v)));
  if (!(sys.allocator_fragmentation >= 0 && sys.allocator_fragmentation <= 1))
    issues.add("/accelerator/allocator_fragmentation",
               "must be in [0, 1] (reserved / allocated − 1 of the caching allocator; measured 0.03–0.08)");
  if (!(unusable_gbs >= 0)) issues.add("/accelerator/unusable_mem_gbs", "must be ≥ 0");
  check_magnitude(issues, "/accelerator/unusable_mem_gbs", unusable_gbs, kMaxRate);
  if (mem_gbs > 0 && unusable_gbs >= mem_gbs && a.has("unusable_mem_gbs"))
    issues.add("/accelerator/unusable_mem_gbs", strprintf("%g GiB leaves no memory of the device's %g GiB; expected "
                                                          "a few GiB (CUDA context, NCCL buffers)", unusable_gbs, mem_gbs));
}

// accelerator/op: each op class's peak, efficiency, measured entries and model. The one place a
// class name of a system file is checked: a name the table (calibration/op_class.h) lacks is
// rejected, with the closest name.
void read_op_classes(const json* ops, SystemConfig& sys, IssueList& issues) {
  for (auto it = ops->begin(); it != ops->end(); ++it) {
    std::string p = "/accelerator/op/" + it.key();
    const std::optional<OpClass> cls = find_op_class(it.key());
    if (!cls) {
      issues.add(p, kOpClasses.unknown(it.key()));
      continue;
    }
    ComputeOpConfig op;
    ObjectReader r(it.value(), p, issues);
    double tflops = 0;
    r.req("tflops", tflops);
    r.req("efficient_factor", op.efficient_factor);
    op.has_accurate = r.has("accurate_efficient_factor");
    std::map<std::string, double> accurate;
    r.opt("accurate_efficient_factor", accurate);
    if (const json* model = r.object("model", false)) {
      if (model->is_object() && model->contains("kind") && (*model)["kind"] == "points")
        op.point_model = read_point_model(*model, p + "/model", *cls, issues);
      else if (model->is_object() && model->contains("kind") && (*model)["kind"] == "grouped_grid")
        op.grouped_model = read_grouped_model(*model, p + "/model", *cls, issues);
      else
        op.gemm_model = read_gemm_model(*model, p + "/model", *cls, issues);
    }
    r.finish();
    if (!(tflops > 0) && it.value().is_object() && it.value().contains("tflops"))
      issues.add(p + "/tflops", "must be > 0");
    // 0 is allowed (the peer ships unmeasured fp8 classes as 0); a plan using it is rejected.
    if (op.efficient_factor < 0) issues.add(p + "/efficient_factor", "must be ≥ 0");
    check_magnitude(issues, p + "/tflops", tflops, kMaxRate, kMinPositive);
    check_magnitude(issues, p + "/efficient_factor", op.efficient_factor, kMaxFactor, kMinPositive);
    for (const auto& [key, eff] : accurate)
      check_magnitude(issues, p + "/accurate_efficient_factor/" + key, eff, kMaxFactor, kMinPositive);
    for (const auto& [key, eff] : accurate)
      if (!(eff > 0)) issues.add(p + "/accurate_efficient_factor/" + key, "must be > 0");
    for (const auto& [key, eff] : accurate) op.accurate.set(key, eff);
    op.peak_flops = tflops * kTera;
    sys.ops[it.key()] = std::move(op);
  }
  if (!ops->contains("default")) issues.add("/accelerator/op/default", "required op class is missing");
}

// networks: each group's bandwidth and collectives, and whether the node is PCIe.
void read_networks(const json* nets, SystemConfig& sys, IssueList& issues) {
  for (auto it = nets->begin(); it != nets->end(); ++it) {
    std::string p = "/networks/" + it.key();
    if (it.key() == "intra_with_pcie") {
      if (!it.value().is_boolean()) {
        issues.add(p, "expected true or false");
      } else {
        sys.intra_with_pcie = it.value().get<bool>();
      }
      continue;
    }
    NetworkConfig net;
    ObjectReader r(it.value(), p, issues);
    r.opt("processor_usage", net.processor_usage);
    if (const json* bw = r.object("bandwidth", true))
      read_bandwidth(*bw, p + "/bandwidth", issues, net.bandwidth, true);
    if (const json* ops = r.object("op", true)) {
      ObjectReader ro(*ops, p + "/op", issues);
      for (const std::string_view name : kNetCollectives) {
        const char* c = name.data();  // a literal: NUL-terminated
        if (const json* oj = ro.object(c, false)) {
          NetOpConfig op;
          read_net_op(*oj, p + "/op/" + c, issues, op);
          if (oj->is_object() && oj->contains("model"))
            op.model = read_collective_model((*oj)["model"], p + "/op/" + c + "/model", op, issues);
          net.ops[c] = op;
        }
      }
      ro.finish();
    }
    r.finish();
    sys.networks[it.key()] = std::move(net);
  }
}

}  // namespace

SystemConfig load_system(const std::string& text, const std::string& source) {
  json doc = parse_json(text, source);
  IssueList issues(source);
  SystemConfig sys;
  ObjectReader top(doc, "", issues);
  top.opt("schema_version", sys.schema_version);
  top.opt("description", sys.description);
  if (const json* prov = top.object("provenance", false)) sys.provenance_json = prov->dump();
  top.req("sys_name", sys.sys_name);
  top.opt("num_per_node", sys.num_per_node);
  sys.has_fc8 = top.has("FC8");
  top.opt("FC8", sys.fc8);
  if (sys.num_per_node < 1 || sys.num_per_node > (1 << 16))
    issues.add("/num_per_node", "must be in 1..65536");
  top.opt("nvlink_domain_size", sys.nvlink_domain_size);
  if (sys.nvlink_domain_size && (*sys.nvlink_domain_size < sys.num_per_node || *sys.nvlink_domain_size > (1 << 20) ||
                                 *sys.nvlink_domain_size % std::max<int64_t>(1, sys.num_per_node) != 0))
    issues.add("/nvlink_domain_size", strprintf("must be a multiple of num_per_node (%lld) up to 1048576, got %lld",
                                                static_cast<long long>(sys.num_per_node),
                                                static_cast<long long>(*sys.nvlink_domain_size)));
  top.opt("straggler_jitter", sys.straggler_jitter);
  if (sys.straggler_jitter && !(*sys.straggler_jitter >= 0 && *sys.straggler_jitter <= 1))
    issues.add("/straggler_jitter", "must be in [0, 1] (relative step-time jitter of one node), got " +
                                        format_number(*sys.straggler_jitter));

  if (const json* host = top.object("host", false)) read_host(host, sys, issues);
  if (const json* acc = top.object("accelerator", true)) {
    ObjectReader a(*acc, "/accelerator", issues);
    a.opt("backend", sys.backend);
    double mem_gbs = 0;
    a.opt("mem_gbs", mem_gbs);
    sys.mem_bytes = mem_gbs * kGiB;
    if (mem_gbs < 0) issues.add("/accelerator/mem_gbs", "must be ≥ 0");
    check_magnitude(issues, "/accelerator/mem_gbs", mem_gbs, kMaxRate);
    read_memory_terms(a, mem_gbs, sys, issues);
    a.opt("sm_count", sys.sm_count);
    if (sys.sm_count && !(*sys.sm_count >= 1 && *sys.sm_count <= 100000))
      issues.add("/accelerator/sm_count", strprintf("must be in 1..100000 (streaming multiprocessors; H100 SXM: 132), "
                                                    "got %lld", static_cast<long long>(*sys.sm_count)));
    std::string mode = "roofline";
    a.opt("mode", mode);
    if (mode == "roofline") {
      sys.mode = CostMode::Roofline;
    } else if (mode == "only_compute") {
      sys.mode = CostMode::OnlyCompute;
    } else {
      issues.add("/accelerator/mode", "unknown mode '" + mode + "'; valid values: roofline, only_compute");
    }
    if (const json* ops = a.object("op", true)) read_op_classes(ops, sys, issues);
    if (const json* bws = a.object("bandwidth", true)) {
      for (auto it = bws->begin(); it != bws->end(); ++it) {
        BandwidthConfig bw;
        read_bandwidth(it.value(), "/accelerator/bandwidth/" + it.key(), issues, bw, true, true);
        sys.bandwidths[it.key()] = bw;
      }
      if (!bws->contains("default"))
        issues.add("/accelerator/bandwidth/default", "required bandwidth class is missing");
    }
    a.finish();
  }

  if (const json* nets = top.object("networks", true)) read_networks(nets, sys, issues);
  top.finish();
  issues.throw_if_any();
  refresh_fingerprint(sys);
  return sys;
}

void EfficiencyTable::set(const std::string& text, double efficiency) {
  const auto key = pack_shape_key(text);
  if (!key) {
    text_[text] = efficiency;
    return;
  }
  if (index_.empty()) index_.resize(16);
  const size_t hash = PackedKeyHash{}(*key);
  size_t i = slot_of(*key, hash);
  if (index_[i].at != 0) {
    entries_[index_[i].at - 1].efficiency = efficiency;
    return;
  }
  entries_.push_back({*key, efficiency});
  index_[i] = {static_cast<uint32_t>(hash >> 32), static_cast<uint32_t>(entries_.size())};
  if (2 * entries_.size() < index_.size()) return;
  // Rehash from the slots themselves: each keeps the hash bits that place it.
  std::vector<Slot> old(2 * index_.size());
  old.swap(index_);
  const size_t mask = index_.size() - 1;
  for (const Slot& s : old) {
    if (s.at == 0) continue;
    size_t j = s.hash & mask;
    while (index_[j].at != 0) j = (j + 1) & mask;
    index_[j] = s;
  }
}

size_t EfficiencyTable::slot_of(const PackedKey& key, size_t hash) const {
  const auto h = static_cast<uint32_t>(hash >> 32);
  const size_t mask = index_.size() - 1;
  size_t i = h & mask;
  for (; index_[i].at != 0; i = (i + 1) & mask)
    if (index_[i].hash == h && entries_[index_[i].at - 1].key == key) break;
  return i;
}

const double* EfficiencyTable::find(const PackedKey& key, size_t hash) const {
  if (index_.empty()) return nullptr;
  const Slot& s = index_[slot_of(key, hash)];
  return s.at != 0 ? &entries_[s.at - 1].efficiency : nullptr;
}

const double* EfficiencyTable::find(const std::string& text) const {
  if (const auto key = pack_shape_key(text)) return find(*key);
  auto it = text_.find(text);
  return it != text_.end() ? &it->second : nullptr;
}

double EfficiencyTable::at(const std::string& text) const {
  if (const double* e = find(text)) return *e;
  throw std::out_of_range("no efficiency for shape key '" + text + "'");
}

std::vector<std::pair<std::string, double>> EfficiencyTable::entries() const {
  std::vector<std::pair<std::string, double>> out(text_.begin(), text_.end());
  for (const auto& e : entries_) out.emplace_back(format_packed_key(e.key), e.efficiency);
  std::sort(out.begin(), out.end());
  return out;
}

int64_t nvlink_domain(const SystemConfig& sys) { return sys.nvlink_domain_size.value_or(sys.num_per_node); }

}  // namespace trainsim
