// comm.json writer, fitting of all series, result table.
#include "results.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "core/text.h"

namespace comm_bench {
namespace {

using nlohmann::ordered_json;

constexpr double kUs = 1e6;
constexpr double kGB = 1e9;  // nccl-tests GB/s

// Keep 6 significant digits: measured data, and stable files.
double round6(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double mag = std::pow(10.0, 5 - static_cast<int>(std::floor(std::log10(std::fabs(v)))));
  return std::round(v * mag) / mag;
}

bool is_skip_from_fit(const Skip& s) { return s.reason.rfind("fit: ", 0) == 0; }

}  // namespace

void fit_all(CommResults& r, const FitOptions& opt) {
  r.fits.clear();
  std::erase_if(r.skipped, is_skip_from_fit);
  // Series keyed by (plan, collective) in first-appearance order.
  std::vector<std::pair<std::string, Collective>> keys;
  for (const auto& p : r.points) {
    std::pair<std::string, Collective> k{p.group, p.op};
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  }
  for (const auto& [group, op] : keys) {
    std::vector<SeriesPoint> series;
    const Point* first = nullptr;
    for (const auto& p : r.points) {
      if (p.group != group || p.op != op) continue;
      if (!first) first = &p;
      series.push_back({static_cast<double>(p.size_bytes), model_bytes(op, static_cast<double>(p.size_bytes), p.n),
                        p.time_s});
    }
    if (first->network.empty() || first->n < 2) continue;
    Fit f{op, group, first->kind, first->network, first->n, fit_alpha_beta(series, opt)};
    if (!f.fit.ok) {
      r.skipped.push_back({info(op).name, group, "fit: " + f.fit.reason});
      continue;
    }
    r.fits.push_back(f);
  }
}

std::string results_to_json_text(const CommResults& r) {
  ordered_json j;
  j["schema_version"] = kCommSchemaVersion;
  j["complete"] = r.complete;
  const Provenance& p = r.provenance;
  ordered_json pj;
  pj["tool"] = p.tool;
  pj["tool_version"] = p.tool_version;
  pj["date"] = p.date;
  pj["command"] = p.command;
  pj["host"] = p.host;
  pj["hosts"] = p.hosts;
  pj["world_size"] = p.world_size;
  pj["ranks_per_node"] = p.ranks_per_node;
  pj["nodes"] = p.nodes;
  pj["gpu"] = p.gpu;
  pj["nccl_version"] = p.nccl_version;
  pj["cuda_runtime_version"] = p.cuda_runtime_version;
  pj["cuda_driver_version"] = p.cuda_driver_version;
  pj["mpi_version"] = p.mpi_version;
  pj["intra_link"] = p.intra_link;
  pj["topology_source"] = p.topology_source;
  pj["dtype"] = p.dtype;
  pj["timing"] = p.timing;
  pj["warmup"] = p.warmup;
  pj["iters"] = p.iters;
  pj["sources"] = p.sources;
  pj["env"] = p.env;
  j["provenance"] = pj;
  j["units"] = {{"time", "us"}, {"bandwidth", "GB/s (1e9 bytes/s, nccl-tests convention)"},
                {"fit_x", "size_bytes*scale*(n+offset)/n"}};

  ordered_json groups = ordered_json::array();
  for (const auto& g : r.groups)
    groups.push_back({{"name", g.name}, {"kind", kind_name(g.kind)}, {"network", g.network},
                      {"size", g.size}, {"count", g.count}});
  j["groups"] = groups;

  ordered_json fits = ordered_json::array();
  for (const auto& f : r.fits) {
    fits.push_back({{"op", info(f.op).name},
                    {"group", f.group},
                    {"kind", kind_name(f.kind)},
                    {"network", f.network},
                    {"n", f.n},
                    {"latency_us", round6(f.fit.latency_s * kUs)},
                    {"bus_bandwidth_gbs", round6(f.fit.bus_bandwidth / kGB)},
                    {"r2", round6(f.fit.r2)},
                    {"max_rel_residual", round6(f.fit.max_rel_residual)},
                    {"small_points", f.fit.small_points},
                    {"large_points", f.fit.large_points},
                    {"method", f.fit.method}});
  }
  j["fits"] = fits;

  ordered_json pts = ordered_json::array();
  for (const auto& pt : r.points) {
    const double size = static_cast<double>(pt.size_bytes);
    const double alg = algbw(size, pt.time_s);
    pts.push_back({{"op", info(pt.op).name},
                   {"group", pt.group},
                   {"kind", kind_name(pt.kind)},
                   {"network", pt.network},
                   {"n", pt.n},
                   {"size_bytes", pt.size_bytes},
                   {"time_us", round6(pt.time_s * kUs)},
                   {"algbw_gbs", round6(alg / kGB)},
                   {"busbw_gbs", round6(alg * busbw_factor(pt.op, pt.n) / kGB)},
                   {"iters", pt.iters}});
  }
  j["points"] = pts;

  ordered_json sk = ordered_json::array();
  for (const auto& s : r.skipped) sk.push_back({{"op", s.op}, {"group", s.group}, {"reason", s.reason}});
  j["skipped"] = sk;
  j["notes"] = r.notes;
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string results_table(const CommResults& r) {
  std::string out = trainsim::strprintf("%-15s %-16s %4s %12s %12s %10s %10s\n", "collective", "group", "n",
                                        "size", "time_us", "algbw_GB/s", "busbw_GB/s");
  for (const auto& p : r.points) {
    const double alg = algbw(static_cast<double>(p.size_bytes), p.time_s);
    out += trainsim::strprintf("%-15s %-16s %4d %12s %12.2f %10.2f %10.2f\n", info(p.op).name, p.group.c_str(),
                               p.n, format_bytes(p.size_bytes).c_str(), p.time_s * kUs, alg / kGB,
                               alg * busbw_factor(p.op, p.n) / kGB);
  }
  if (!r.fits.empty()) {
    out += trainsim::strprintf("\n%-15s %-16s %-20s %4s %12s %14s %8s %9s\n", "collective", "group", "network", "n",
                               "latency_us", "bus_bw_GB/s", "r2", "max_rel");
    for (const auto& f : r.fits)
      out += trainsim::strprintf("%-15s %-16s %-20s %4d %12.2f %14.2f %8.4f %9.3f\n", info(f.op).name,
                                 f.group.c_str(), f.network.c_str(), f.n, f.fit.latency_s * kUs,
                                 f.fit.bus_bandwidth / kGB, f.fit.r2, f.fit.max_rel_residual);
  }
  for (const auto& n : r.notes) out += "note: " + n + "\n";
  for (const auto& s : r.skipped)
    out += "skipped " + (s.op.empty() ? std::string() : s.op + " ") + "on " + s.group + ": " + s.reason + "\n";
  return out;
}

}  // namespace comm_bench
