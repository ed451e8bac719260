// Merges comm_bench fits into a system config.
//
// A fit says t(size) = α + x/B with x = size·scale·(n+offset)/n (comm_bench/fit.h). The
// simulator (SimuMax config.py compute_net_op_time) computes
//   t = x/(gbps·2^30·eff) + lat·h(n) + fixed(n),  h(n) = (n+offset)·scale if num_per_node == 8
//   and the op is a collective, else 1,
// so the merge sets eff = B/(gbps·2^30) and splits α into lat·h(n) + fixed(n).
#include "calibration/comm_merge.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <tuple>

#include "inputs/json_reader.h"
#include "inputs/schema_version.h"
#include "core/error.h"
#include "core/text.h"
#include "core/units.h"

namespace trainsim {
namespace {

using nlohmann::json;

struct OpRow {
  const char* name;
  double scale, offset;
};
// SimuMax canonical scale/offset (system JSON networks.*.op).
constexpr OpRow kOps[] = {{"all_reduce", 2, -1}, {"all_gather", 1, -1}, {"reduce_scatter", 1, -1},
                          {"p2p", 1, 0}, {"all2all", 1, -1}};
const char* const kNetworks[] = {"high_intra_node", "low_intra_node", "inter_node", "intra_node_pcie_2x",
                                 "intra_node_pcie_4x", "intra_node_pcie_8x"};

// Plausibility of a fit (as the system file's gbps and latency_us ranges): at most 1000 s of
// latency; a bus bandwidth of 1 kB/s to 1 PB/s.
constexpr double kMaxFitLatencyUs = kSystemMaxLatencyUs;
constexpr double kMinFitBandwidthGbs = kSystemMinPositive;
constexpr double kMaxFitBandwidthGbs = kSystemMaxRate;

// The system file's ranges (system_config.cpp) on a fit: beyond them the merged efficiency or
// latency overflowed (an infinite efficient_factor was written as null and read back as unset).
bool fit_in_range(double lat_us, double bw_gbs, const std::string& path, IssueList& issues) {
  const bool lat_ok = lat_us <= kMaxFitLatencyUs;
  const bool bw_ok = !(bw_gbs > 0) || (bw_gbs >= kMinFitBandwidthGbs && bw_gbs <= kMaxFitBandwidthGbs);
  if (!lat_ok) issues.add(path + "/latency_us", strprintf("must be at most %g µs, got %g", kMaxFitLatencyUs, lat_us));
  if (!bw_ok)
    issues.add(path + "/bus_bandwidth_gbs", strprintf("must be in [%g, %g] GB/s, got %g", kMinFitBandwidthGbs,
                                                      kMaxFitBandwidthGbs, bw_gbs));
  return lat_ok && bw_ok;
}

const OpRow* find_op(const std::string& name) {
  for (const auto& r : kOps)
    if (name == r.name) return &r;
  return nullptr;
}

std::string unknown_value(const std::string& what, const std::string& v, const std::vector<std::string>& valid) {
  std::string msg = "unknown " + what + " '" + v + "'; valid values: " + join(valid);
  if (std::string s = suggest(v, valid); !s.empty()) msg += "; did you mean '" + s + "'?";
  return msg;
}

struct Measured {
  double latency_s;      // α
  double bytes_per_s;    // B
};

// The measured points of comm.json by network and op (whole-world and single-rank groups left
// out, as their fits): what the collective models are fitted from. A point of the wrong shape,
// of an op or network the fits do not know, or one the model rejects is an issue at its path
// (they were skipped without a word, or named by their index within their op's points).
std::map<std::string, std::map<std::string, std::vector<CollectivePoint>>> read_points(
    const json& doc, const std::vector<std::string>& op_names, const std::vector<std::string>& net_names,
    IssueList& issues) {
  std::map<std::string, std::map<std::string, std::vector<CollectivePoint>>> out;
  std::map<std::tuple<std::string, std::string, int64_t, double>, size_t> seen;  // first index of a size
  if (!doc.is_object() || !doc.contains("points")) return out;
  if (!doc["points"].is_array()) {
    issues.add("/points", "expected an array of {op, network, n, size_bytes, time_us} (as comm_bench writes it)");
    return out;
  }
  const json& points = doc["points"];
  for (size_t i = 0; i < points.size(); ++i) {
    const json& p = points[i];
    const std::string path = "/points/" + std::to_string(i);
    if (!p.is_object()) {
      issues.add(path, "expected an object {op, network, n, size_bytes, time_us}");
      continue;
    }
    const json& kind = p.value("kind", json("intra_node"));
    if (!kind.is_string()) {
      issues.add(path + "/kind", "expected a string (intra_node, inter_node, world or single)");
      continue;
    }
    if (kind == "world" || kind == "single") continue;
    const json &op = p.value("op", json()), &net = p.value("network", json()), &n = p.value("n", json());
    const json &bytes = p.value("size_bytes", json()), &t = p.value("time_us", json());
    bool ok = true;
    const auto need = [&](bool good, const char* key, const char* what) {
      if (!good) issues.add(path + "/" + key, std::string("expected ") + what);
      ok = ok && good;
    };
    need(op.is_string(), "op", "a string (the collective)");
    need(net.is_string(), "network", "a string (the network class)");
    need(n.is_number_integer(), "n", "an integer (the group size)");
    need(bytes.is_number(), "size_bytes", "a number (the message size in bytes)");
    need(t.is_number(), "time_us", "a number (the measured time in µs)");
    if (!ok) continue;
    const std::string op_name = op.get<std::string>(), net_name = net.get<std::string>();
    if (std::find(op_names.begin(), op_names.end(), op_name) == op_names.end()) {
      issues.add(path + "/op", unknown_value("collective", op_name, op_names));
      ok = false;
    }
    if (std::find(net_names.begin(), net_names.end(), net_name) == net_names.end()) {
      issues.add(path + "/network", unknown_value("network", net_name, net_names));
      ok = false;
    }
    const CollectivePoint cp{n.get<int64_t>(), bytes.get<double>(), t.get<double>() * kMicro};
    if (const char* why = CollectiveModel::point_problem(cp)) {
      issues.add(path, strprintf("%s (n %lld, size_bytes %g, time_us %g)", why, static_cast<long long>(cp.n),
                                 cp.bytes, t.get<double>()));
      ok = false;
    }
    if (!ok) continue;
    const auto [first, fresh] = seen.emplace(std::tuple{net_name, op_name, cp.n, cp.bytes}, i);
    if (!fresh) {
      issues.add(path, strprintf("a second time for %s on %s with n %lld and %g bytes; the first is /points/%zu",
                                 op_name.c_str(), net_name.c_str(), static_cast<long long>(cp.n), cp.bytes,
                                 first->second));
      continue;
    }
    out[net_name][op_name].push_back(cp);
  }
  return out;
}

// A model of one op's points on one network, with its provenance.
std::shared_ptr<const CollectiveModel> fit_model(const OpRow& row, std::vector<CollectivePoint> points,
                                                 const std::string& source, const json* prov,
                                                 const std::string& where, IssueList& issues) {
  std::vector<int64_t> ns;
  double lo = INFINITY, hi = 0;
  for (const auto& p : points) {
    if (std::find(ns.begin(), ns.end(), p.n) == ns.end()) ns.push_back(p.n);
    lo = std::min(lo, p.bytes);
    hi = std::max(hi, p.bytes);
  }
  std::sort(ns.begin(), ns.end());
  std::shared_ptr<CollectiveModel> m;
  try {
    m = std::make_shared<CollectiveModel>(row.scale, row.offset, std::move(points));
  } catch (const std::invalid_argument& e) {
    issues.add(where, e.what());
    return nullptr;
  }
  json p = {{"file", source}, {"points", m->points()}, {"group_sizes", ns}, {"min_bytes", lo}, {"max_bytes", hi}};
  if (prov)
    for (const char* k : {"gpu", "nccl_version", "date", "import"})
      if (prov->contains(k)) p[k] = (*prov)[k];
  m->provenance_json = p.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return m;
}

// comm.json's provenance kept under the system's provenance.comm_bench.
void record_provenance(SystemConfig& sys, const json* prov, const std::string& source, bool complete) {
  json p = json::object();
  if (!sys.provenance_json.empty()) {
    json old = json::parse(sys.provenance_json, nullptr, false);
    if (old.is_object()) p = old;
  }
  json comm = prov ? *prov : json::object();
  comm["source"] = source;
  comm["complete"] = complete;
  p["comm_bench"] = comm;
  sys.provenance_json = p.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

void merge_comm(SystemConfig& sys, const std::string& comm_json_text, const std::string& source) {
  json doc = parse_json(comm_json_text, source);
  IssueList issues(source);
  ObjectReader top(doc, "", issues);
  std::string version;
  top.req("schema_version", version);
  bool complete = true;
  top.opt("complete", complete);
  const json* prov = top.object("provenance", false);
  for (const char* k : {"units", "groups", "points", "skipped", "notes", "fits"}) top.ignore(k);
  top.finish();
  check_schema_major(doc, "1", issues);
  const json* fits = doc.is_object() && doc.contains("fits") ? &doc["fits"] : nullptr;
  if (doc.is_object() && (!fits || !fits->is_array())) issues.add("/fits", "required array is missing");
  issues.throw_if_any();

  std::vector<std::string> op_names, net_names(std::begin(kNetworks), std::end(kNetworks));
  for (const auto& r : kOps) op_names.emplace_back(r.name);
  // network → op → n → measurement
  std::map<std::string, std::map<std::string, std::map<int64_t, Measured>>> by_net;
  for (size_t i = 0; i < fits->size(); ++i) {
    const std::string path = "/fits/" + std::to_string(i);
    ObjectReader r((*fits)[i], path, issues);
    std::string op, network, kind = "intra_node";
    int64_t n = 0;
    double lat_us = 0, bw_gbs = 0;
    r.req("op", op);
    r.req("network", network);
    r.req("n", n);
    r.req("latency_us", lat_us);
    r.req("bus_bandwidth_gbs", bw_gbs);
    r.opt("kind", kind);
    for (const char* k : {"group", "r2", "max_rel_residual", "small_points", "large_points", "method"}) r.ignore(k);
    r.finish();
    if (!(*fits)[i].is_object()) continue;
    // Whole-world groups mix NVLink and network hops, single ranks move no data: reported only.
    if (kind == "world" || kind == "single") continue;
    bool ok = true;
    if (!find_op(op)) {
      issues.add(path + "/op", unknown_value("collective", op, op_names));
      ok = false;
    }
    if (std::find(net_names.begin(), net_names.end(), network) == net_names.end()) {
      issues.add(path + "/network", unknown_value("network", network, net_names));
      ok = false;
    }
    if (n < 2) issues.add(path + "/n", "must be ≥ 2, got " + std::to_string(n));
    if (lat_us < 0) issues.add(path + "/latency_us", "must be ≥ 0");
    if (!(bw_gbs > 0)) issues.add(path + "/bus_bandwidth_gbs", "must be > 0");
    const bool in_range = fit_in_range(lat_us, bw_gbs, path, issues);
    if (!ok || n < 2 || lat_us < 0 || !(bw_gbs > 0) || !in_range) continue;
    auto [it, inserted] = by_net[network][op].emplace(n, Measured{lat_us * kMicro, bw_gbs * 1e9});
    if (!inserted)
      issues.add(path, strprintf("second fit for %s on %s with n = %lld", op.c_str(), network.c_str(),
                                 static_cast<long long>(n)));
  }
  const bool has_pcie = std::any_of(by_net.begin(), by_net.end(),
                                    [](const auto& kv) { return kv.first.rfind("intra_node_pcie", 0) == 0; });
  if (has_pcie && by_net.count("high_intra_node"))
    issues.add("/fits", "fits mix NVLink (high_intra_node) and PCIe (intra_node_pcie_*) intra-node classes");
  issues.throw_if_any();

  const auto points = read_points(doc, op_names, net_names, issues);
  issues.throw_if_any();
  for (const auto& [net_name, ops] : by_net) {
    const bool existed = sys.networks.count(net_name) > 0;
    NetworkConfig& net = sys.networks[net_name];
    // inter_node bandwidth is per node: the simulator divides it among up to num_per_node GPUs
    // (SimuMax compute_net_op_time), and comm_bench measures it with every GPU of a node busy.
    const double per_node = net_name == "inter_node" ? static_cast<double>(sys.num_per_node) : 1.0;
    std::map<std::string, double> op_bw;
    double min_lat = INFINITY;
    for (const auto& [op_name, by_n] : ops) {
      const OpRow& row = *find_op(op_name);
      NetOpConfig& op = net.ops[op_name];
      op.scale = row.scale;
      op.offset = row.offset;
      // Bandwidth from the largest group measured (the TP/EP size that dominates step time).
      op_bw[op_name] = by_n.rbegin()->second.bytes_per_s * per_node;
      auto hops = [&](int64_t n) {
        return sys.num_per_node == 8 && row.offset != 0 ? (static_cast<double>(n) + row.offset) * row.scale : 1.0;
      };
      // Per-hop latency = the smallest per-hop α over group sizes; the rest of each α is that
      // size's fixed latency (≥ 0), so every measured size is reproduced exactly.
      double lat = INFINITY;
      for (const auto& [n, m] : by_n) lat = std::min(lat, m.latency_s / hops(n));
      op.latency_s = lat;
      op.fixed_latency_s = 0.0;
      op.fixed_latency_s_by_comm_num.clear();
      op.has_fixed_by_comm_num = true;
      for (const auto& [n, m] : by_n)
        op.fixed_latency_s_by_comm_num[std::to_string(n)] = std::max(0.0, m.latency_s - lat * hops(n));
      min_lat = std::min(min_lat, lat);
    }
    if (!existed || !(net.bandwidth.bytes_per_s > 0)) {
      double max_bw = 0;
      for (const auto& [k, v] : op_bw) max_bw = std::max(max_bw, v);
      net.bandwidth.bytes_per_s = max_bw;
      net.bandwidth.efficient_factor = 1;
      net.bandwidth.latency_s = min_lat;
    }
    if (!existed)
      for (const auto& r : kOps)
        if (!net.ops.count(r.name)) net.ops[r.name] = NetOpConfig{r.scale, r.offset, {}, {}, {}, {}, {}, false, nullptr};
    for (const auto& [op_name, bw] : op_bw) net.ops[op_name].efficient_factor = bw / net.bandwidth.bytes_per_s;
    // The size-dependent model of each fitted op from its measured points (the default mode's
    // answer; the α–β entries above stay for compat mode).
    if (auto it = points.find(net_name); it != points.end())
      for (const auto& [op_name, pts] : it->second)
        if (ops.count(op_name) && !pts.empty())
          net.ops[op_name].model =
              fit_model(*find_op(op_name), pts, source, prov, "/points (" + net_name + " " + op_name + ")", issues);
  }
  issues.throw_if_any();
  if (has_pcie) sys.intra_with_pcie = true;
  if (by_net.count("high_intra_node")) sys.intra_with_pcie = false;

  record_provenance(sys, prov, source, complete);
  refresh_fingerprint(sys);
}

}  // namespace trainsim
