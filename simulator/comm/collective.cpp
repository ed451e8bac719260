// Alpha-beta collective model with the peer's per-op scale/offset, efficiencies, latencies and
// inter-node NIC sharing (SimuMax config.py:compute_net_op_time, perf_llm.py:analysis_net).
#include "comm/collective.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <string_view>

namespace trainsim {

static_assert(std::size(kNetCollectives) == kCollectiveCount);

const char* collective_name(Collective c) { return kNetCollectives[static_cast<size_t>(c)].data(); }

static_assert(std::size(kNetworkGroups) == kNetworkCount);

const std::string& network_name(Network n) {
  static const std::string names[kNetworkCount] = {
      std::string(kNetworkGroups[0]), std::string(kNetworkGroups[1]), std::string(kNetworkGroups[2]),
      std::string(kNetworkGroups[3]), std::string(kNetworkGroups[4])};
  return names[static_cast<size_t>(n)];
}

namespace {

NetworkRef resolved(const NetworkConfig* config, bool pcie, bool nvlink, bool inter_node, Mode mode) {
  NetworkRef r;
  r.pcie = pcie;
  r.nvlink = nvlink;
  r.inter_node = inter_node;
  r.config = config;
  if (config)
    for (size_t c = 0; c < kCollectiveCount; ++c) {
      r.ops[c] = config->ops.known(c);
      if (r.ops[c] && mode == Mode::Default) r.models[c] = r.ops[c]->model.get();
    }
  return r;
}

// The group `n` of `sys`, found by its index in the system (no name matched).
NetworkRef resolve_network(const SystemConfig& sys, Network n, Mode mode) {
  const bool pcie = n == Network::IntraNodePcie2x || n == Network::IntraNodePcie4x || n == Network::IntraNodePcie8x;
  return resolved(sys.networks.known(static_cast<size_t>(n)), pcie, n == Network::HighIntraNode,
                  n == Network::InterNode, mode);
}

}  // namespace

NetworkRef resolve_network(const SystemConfig& sys, const std::string& name, Mode mode) {
  if (const int n = NetworkGroups::index_of(name); n >= 0) return resolve_network(sys, static_cast<Network>(n), mode);
  const auto it = sys.networks.find(name);
  return resolved(it != sys.networks.end() ? &it->second : nullptr, name.find("pcie") != std::string::npos, false,
                  false, mode);
}

namespace {

// The stage tags the data-parallel terms test for ("dp", "dp_cp", "edp"), read in place: every
// collective asks, and the tags are short literals.
enum class DpTag : uint8_t { None, Dp, DpCp, Edp };
DpTag dp_tag(const char* st) {
  if (st[0] == 'd' && st[1] == 'p') {
    if (st[2] == '\0') return DpTag::Dp;
    return st[2] == '_' && st[3] == 'c' && st[4] == 'p' && st[5] == '\0' ? DpTag::DpCp : DpTag::None;
  }
  return st[0] == 'e' && st[1] == 'd' && st[2] == 'p' && st[3] == '\0' ? DpTag::Edp : DpTag::None;
}

// A group size as the key text of the system's per-size tables ("8"), formed on the stack.
class SizeKey {
 public:
  explicit SizeKey(int64_t n) : end_(std::to_chars(buf_, buf_ + sizeof buf_, n).ptr) {}
  [[nodiscard]] std::string_view text() const { return {buf_, static_cast<size_t>(end_ - buf_)}; }

 private:
  char buf_[24];
  char* end_;
};

// Case-insensitive substring test (the peer lowercases the stage tag before its `in` tests).
bool contains_nocase(std::string_view hay, std::string_view needle) {
  auto eq = [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; };
  return std::search(hay.begin(), hay.end(), needle.begin(), needle.end(), eq) != hay.end();
}

// The network of each group (choose_networks without the resolving).
std::array<Network, kGroupCount> pick_networks(const SystemConfig& sys, const Settings& s, Mode mode) {
  const int64_t npn = sys.num_per_node, tp = s.par.tp, cp = s.par.cp, dp = s.par.dp;
  const int64_t ep = s.par.ep, etp = s.par.etp, edp = s.par.edp, pp = s.par.pp;
  std::array<Network, kGroupCount> c{};
  auto set = [&](Group g, Network n) { c[static_cast<size_t>(g)] = n; };
  if (sys.intra_with_pcie) {
    auto pcie = [](int64_t x) {
      if (x <= 2) return Network::IntraNodePcie2x;
      if (x <= 4) return Network::IntraNodePcie4x;
      if (x <= 8) return Network::IntraNodePcie8x;
      return Network::InterNode;
    };
    set(Group::TP, pcie(tp));
    set(Group::CP, pcie(tp * cp));
    set(Group::DP, pcie(tp * cp * dp));
    set(Group::PP, pcie(tp * dp * pp * cp));
    set(Group::EP, pcie(ep * etp));
    set(Group::ETP, pcie(etp));
    set(Group::EDP, pcie(etp * ep * edp));
    return c;
  }
  auto nv = [](bool intra) { return intra ? Network::HighIntraNode : Network::InterNode; };
  if (mode == Mode::Default) {
    const int64_t domain = nvlink_domain(sys);
    // Groups are blocks of `span` consecutive ranks, aligned at multiples of the span.
    auto inside = [&](int64_t span) { return span <= domain && domain % span == 0; };
    set(Group::TP, nv(inside(tp)));
    set(Group::CP, nv(inside(tp * cp)));
    set(Group::DP, nv(inside(tp * cp * dp)));
    set(Group::PP, nv(pp == 1 || s.par.world <= domain));
    set(Group::EP, nv(inside(ep * etp)));
    set(Group::ETP, nv(inside(etp)));
    set(Group::EDP, nv(inside(etp * ep * edp)));
    return c;
  }
  set(Group::TP, nv(tp <= npn));
  set(Group::CP, nv(tp * cp <= npn));
  set(Group::DP, nv(tp * cp * dp <= npn));
  set(Group::PP, nv(s.par.world / pp < npn));
  set(Group::EP, nv(ep * etp <= npn));
  set(Group::ETP, nv(etp <= npn));
  set(Group::EDP, nv(etp * ep * edp <= npn));
  return c;
}

}  // namespace

NetworkChoice resolve_networks(const SystemConfig& sys, const std::array<Network, kGroupCount>& kind, Mode mode) {
  NetworkChoice c;
  c.kind = kind;
  std::array<bool, kNetworkCount> used{};
  for (Network k : c.kind) used[static_cast<size_t>(k)] = true;
  for (size_t k = 0; k < kNetworkCount; ++k)
    if (used[k]) c.nets[k] = resolve_network(sys, static_cast<Network>(k), mode);
  return c;
}

NetworkChoice choose_networks(const SystemConfig& sys, const Settings& s, Mode mode) {
  return resolve_networks(sys, pick_networks(sys, s, mode), mode);
}

double collective_time(const SystemConfig& sys, const Settings& s, const std::string& net,
                       Collective kind, double bytes, int64_t n, const char* stage) {
  return collective_time(sys, s, resolve_network(sys, net), kind, bytes, n, stage);
}

double collective_time(const SystemConfig& sys, const Settings& s, const NetworkRef& net,
                       Collective kind, double bytes, int64_t n, const char* stage, EfficiencySource* how) {
  if (how) *how = EfficiencySource::Default;
  if (!net.config) throw std::out_of_range("collective_time: the system has no such network group");
  const NetOpConfig* found = net.ops[static_cast<size_t>(kind)];
  if (!found) throw std::out_of_range(std::string("collective_time: the network group has no ") + collective_name(kind));
  const NetworkConfig& nd = *net.config;
  const NetOpConfig& op = *found;
  if (const CollectiveModel* model = net.models[static_cast<size_t>(kind)]; model && n > 1) {
    // Measured times over size (the group's own conditions: what comm_bench or nccl-tests ran).
    if (const CollectiveAnswer a = model->predict(bytes, n); a.time_s > 0) {
      if (how) *how = a.source;
      return a.time_s;
    }
  }
  const double eff = op.efficient_factor.value_or(nd.bandwidth.efficient_factor);
  const double dn = static_cast<double>(n);
  // Ring traffic: size·scale·(n+offset)/n (all-reduce 2(n−1)/n, gather/scatter/a2a (n−1)/n).
  double actual = bytes * op.scale;
  actual += actual / dn * op.offset;
  const DpTag tag = dp_tag(stage);
  const bool dp_stage = tag == DpTag::Dp || tag == DpTag::DpCp;
  if (net.pcie && dp_stage && !op.dp_fixed_bw.empty()) {
    // Measured DP bandwidth of the PCIe node for small groups: no efficiency, no latency.
    const SizeKey key(n);
    auto it = op.dp_fixed_bw.find(key.text());
    if (it != op.dp_fixed_bw.end() && it->second != 0) return actual / it->second;
  }
  double bw = nd.bandwidth.bytes_per_s;
  const int64_t npn = sys.num_per_node;
  if (sys.fc8 && net.nvlink) bw *= (dn - 1) / 7;
  if (net.inter_node) {
    // NIC sharing: the node's GPUs share its NICs (bandwidth is per GPU).
    if (kind == Collective::P2P) bw /= static_cast<double>(npn);
    if (kind == Collective::AllToAll && (contains_nocase(stage, "ep") || contains_nocase(stage, "cp"))) {
      const double kk = std::max(1.0, std::ceil(dn / static_cast<double>(npn)));
      actual *= (kk - 1) / kk;
      bw /= static_cast<double>(npn);
    }
    if (kind == Collective::AllReduce || kind == Collective::AllGather ||
        kind == Collective::ReduceScatter) {
      if (dp_stage) {
        bw /= static_cast<double>(std::min(npn, s.par.tp * (tag == DpTag::Dp ? s.par.cp : 1)));
      } else if (tag == DpTag::Edp) {
        bw /= static_cast<double>(std::min(npn, s.par.ep * s.par.etp));
      }
    }
  }
  const double base_lat = op.latency_s.value_or(nd.bandwidth.latency_s);
  if (n == 1) return 0;
  // The group-size key is formed only when some table could hold it.
  double fixed = op.fixed_latency_s ? *op.fixed_latency_s : nd.bandwidth.fixed_latency_s;
  if (!op.fixed_latency_s_by_comm_num.empty() || !nd.bandwidth.fixed_latency_s_by_comm_num.empty()) {
    const SizeKey key(n);
    if (auto it = op.fixed_latency_s_by_comm_num.find(key.text()); it != op.fixed_latency_s_by_comm_num.end()) {
      fixed = it->second;
    } else if (!op.fixed_latency_s) {
      if (auto it2 = nd.bandwidth.fixed_latency_s_by_comm_num.find(key.text());
          it2 != nd.bandwidth.fixed_latency_s_by_comm_num.end())
        fixed = it2->second;
    }
  }
  double lat = base_lat;
  // Ring steps pay the per-step latency only in the peer's 8-GPU-node model.
  if (npn == 8 && kind != Collective::P2P) lat = base_lat * (dn + op.offset) * op.scale;
  return actual / (bw * eff) + lat + fixed;
}

}  // namespace trainsim
