// Group planning.
#include "groups.h"

#include <algorithm>
#include <map>

#include "core/error.h"
#include "core/text.h"

namespace comm_bench {

const char* kind_name(GroupKind k) {
  switch (k) {
    case GroupKind::Single: return "single";
    case GroupKind::IntraNode: return "intra_node";
    case GroupKind::InterNode: return "inter_node";
    case GroupKind::InterNodePair: return "inter_node_pair";
    case GroupKind::World: return "world";
  }
  return "?";
}

GroupKind parse_kind(const std::string& s) {
  const GroupKind all[] = {GroupKind::Single, GroupKind::IntraNode, GroupKind::InterNode,
                           GroupKind::InterNodePair, GroupKind::World};
  std::vector<std::string> names;
  for (GroupKind k : all) {
    if (s == kind_name(k)) return k;
    names.emplace_back(kind_name(k));
  }
  throw trainsim::UsageError("unknown group kind '" + s + "'; valid values: " + trainsim::join(names));
}

int GroupPlan::color_of(int rank) const {
  for (size_t i = 0; i < groups.size(); ++i)
    if (std::find(groups[i].begin(), groups[i].end(), rank) != groups[i].end()) return static_cast<int>(i);
  return -1;
}

std::string network_class(GroupKind k, int size, IntraLink link) {
  switch (k) {
    case GroupKind::Single: return "";
    case GroupKind::InterNode:
    case GroupKind::InterNodePair:
    case GroupKind::World: return "inter_node";
    case GroupKind::IntraNode:
      if (link == IntraLink::NVLink) return "high_intra_node";
      if (size <= 2) return "intra_node_pcie_2x";
      if (size <= 4) return "intra_node_pcie_4x";
      if (size <= 8) return "intra_node_pcie_8x";
      return "";
  }
  return "";
}

std::vector<int> node_ids(const std::vector<std::string>& hostnames) {
  std::map<std::string, int> index;
  std::vector<int> out;
  for (const auto& h : hostnames) {
    auto it = index.emplace(h, static_cast<int>(index.size())).first;
    out.push_back(it->second);
  }
  return out;
}

namespace {

GroupPlan make_plan(std::string name, GroupKind kind, int size, IntraLink link) {
  GroupPlan p;
  p.name = std::move(name);
  p.kind = kind;
  p.size = size;
  p.network = network_class(kind, size, link);
  return p;
}

}  // namespace

std::vector<GroupPlan> plan_groups(const std::vector<int>& node_of_rank, IntraLink link,
                                   std::vector<std::string>* notes) {
  auto note = [&](const std::string& s) {
    if (notes) notes->push_back(s);
  };
  const int world = static_cast<int>(node_of_rank.size());
  std::vector<GroupPlan> plans;
  if (world == 1) {
    GroupPlan p = make_plan("single", GroupKind::Single, 1, link);
    p.groups = {{0}};
    plans.push_back(p);
    note("single process: collectives run on one rank (functional check, bandwidths are not fitted)");
    return plans;
  }
  // ranks_on[node] = world ranks of that node, ascending.
  int nodes = 0;
  for (int n : node_of_rank) nodes = std::max(nodes, n + 1);
  std::vector<std::vector<int>> ranks_on(static_cast<size_t>(nodes));
  for (int r = 0; r < world; ++r) ranks_on[static_cast<size_t>(node_of_rank[static_cast<size_t>(r)])].push_back(r);
  size_t min_local = ranks_on[0].size();
  size_t max_local = 0;
  for (const auto& v : ranks_on) {
    min_local = std::min(min_local, v.size());
    max_local = std::max(max_local, v.size());
  }
  if (min_local != max_local)
    note(trainsim::strprintf("nodes hold %zu to %zu ranks: groups use the first %zu ranks of each node",
                             min_local, max_local, min_local));

  // Intra-node: 2, 4, 8 and the whole node (TP/EP group sizes of the simulator).
  std::vector<int> sizes;
  for (int g : {2, 4, 8, static_cast<int>(min_local)})
    if (g >= 2 && static_cast<size_t>(g) <= min_local && std::find(sizes.begin(), sizes.end(), g) == sizes.end())
      sizes.push_back(g);
  for (int g : sizes) {
    GroupPlan p = make_plan("intra_node_x" + std::to_string(g), GroupKind::IntraNode, g, link);
    if (p.network.empty()) {
      note(trainsim::strprintf("intra-node groups of %d over PCIe skipped: SimuMax has no PCIe class above 8", g));
      continue;
    }
    for (const auto& local : ranks_on)
      for (size_t start = 0; start + static_cast<size_t>(g) <= min_local; start += static_cast<size_t>(g))
        p.groups.emplace_back(local.begin() + static_cast<std::ptrdiff_t>(start),
                              local.begin() + static_cast<std::ptrdiff_t>(start) + g);
    if (min_local % static_cast<size_t>(g) != 0)
      note(trainsim::strprintf("%zu ranks per node do not divide into groups of %d: the rest idle", min_local, g));
    plans.push_back(std::move(p));
  }

  if (nodes >= 2) {
    // One rank per node, every local index at once: the whole NIC load of a node, as DP
    // groups see it when every GPU of the node syncs at the same time.
    GroupPlan p = make_plan("inter_node_x" + std::to_string(nodes), GroupKind::InterNode, nodes, link);
    for (size_t l = 0; l < min_local; ++l) {
      std::vector<int> g;
      for (const auto& local : ranks_on) g.push_back(local[l]);
      p.groups.push_back(g);
    }
    plans.push_back(std::move(p));
  }
  if (nodes > 2) {
    GroupPlan p = make_plan("inter_node_pair", GroupKind::InterNodePair, 2, link);
    for (size_t k = 0; k + 1 < static_cast<size_t>(nodes); k += 2)
      for (size_t l = 0; l < min_local; ++l) p.groups.push_back({ranks_on[k][l], ranks_on[k + 1][l]});
    plans.push_back(std::move(p));
  }
  if (nodes >= 2 && max_local > 1) {
    GroupPlan p = make_plan("world_x" + std::to_string(world), GroupKind::World, world, link);
    std::vector<int> all(static_cast<size_t>(world));
    for (int r = 0; r < world; ++r) all[static_cast<size_t>(r)] = r;
    p.groups.push_back(all);
    plans.push_back(std::move(p));
  }
  if (plans.empty()) note("no group of two or more ranks could be formed");
  return plans;
}

std::vector<Collective> plan_collectives(const GroupPlan& plan, const std::vector<Collective>& requested) {
  std::vector<Collective> out;
  for (Collective c : requested) {
    const bool p2p = c == Collective::P2P;
    if (plan.kind == GroupKind::InterNodePair && !p2p) continue;
    if (p2p && plan.size != 2) continue;
    out.push_back(c);
  }
  return out;
}

std::string describe_plans(const std::vector<GroupPlan>& plans) {
  std::string out;
  for (const auto& p : plans) {
    std::string members;
    constexpr size_t kShown = 4;  // keep large worlds readable
    for (size_t i = 0; i < p.groups.size() && i < kShown; ++i) {
      std::vector<std::string> r;
      for (int x : p.groups[i]) r.push_back(std::to_string(x));
      members += " [" + trainsim::join(r, ",") + "]";
    }
    if (p.groups.size() > kShown) members += trainsim::strprintf(" ... (%zu more)", p.groups.size() - kShown);
    out += trainsim::strprintf("  %-16s %-20s %zu group(s) of %d:%s\n", p.name.c_str(),
                               p.network.empty() ? "-" : p.network.c_str(), p.groups.size(), p.size,
                               members.c_str());
  }
  return out;
}

}  // namespace comm_bench
