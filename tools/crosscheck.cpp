// Cross-check of result files.
#include "crosscheck.h"

#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "inputs/json_reader.h"
#include "calibration/kernels_file.h"
#include "core/error.h"
#include "core/text.h"

namespace trainsim::tools {
namespace {

using nlohmann::json;

std::string format_of(const json& doc, const std::string& name) {
  if (doc.is_object() && doc.contains("results") && doc.contains("device")) return "kernels";
  if (doc.is_object() && doc.contains("points")) return "comm";
  throw ConfigError(name, "", "expected a kernels_bench kernels.json (results, device) or a comm_bench comm.json (points)");
}

// id -> median seconds of the ok results, in file order.
std::vector<std::pair<std::string, double>> kernel_times(const std::string& text, const std::string& name) {
  KernelsDoc doc = load_kernels(text, name);
  std::vector<std::pair<std::string, double>> out;
  for (const auto& r : doc.results)
    if (r.status == "ok") out.emplace_back(r.op + " " + r.key, r.time.median);
  return out;
}

const json& field(const json& p, const char* key, const std::string& name, const std::string& path) {
  if (!p.is_object() || !p.contains(key)) throw ConfigError(name, path + "/" + key, "required field is missing");
  return p.at(key);
}

std::vector<std::pair<std::string, double>> comm_times(const json& doc, const std::string& name, double min_bytes) {
  const json& pts = doc.at("points");
  if (!pts.is_array()) throw ConfigError(name, "/points", "expected an array");
  std::vector<std::pair<std::string, double>> out;
  for (size_t i = 0; i < pts.size(); ++i) {
    const std::string path = "/points/" + std::to_string(i);
    const json& op = field(pts[i], "op", name, path);
    const json& kind = field(pts[i], "kind", name, path);
    const json& n = field(pts[i], "n", name, path);
    const json& size = field(pts[i], "size_bytes", name, path);
    const json& t = field(pts[i], "time_us", name, path);
    if (!op.is_string() || !kind.is_string()) throw ConfigError(name, path, "op and kind must be strings");
    if (!n.is_number_integer() || !size.is_number_unsigned()) throw ConfigError(name, path, "n and size_bytes must be integers");
    if (!t.is_number() || !(t.get<double>() > 0)) throw ConfigError(name, path + "/time_us", "expected a number > 0");
    if (size.get<double>() < min_bytes) continue;
    out.emplace_back(strprintf("%s %s n=%lld %llu B", op.get<std::string>().c_str(), kind.get<std::string>().c_str(),
                               static_cast<long long>(n.get<int64_t>()),
                               static_cast<unsigned long long>(size.get<uint64_t>())),
                     t.get<double>() * 1e-6);
  }
  return out;
}

}  // namespace

size_t CrossReport::within_count() const {
  size_t n = 0;
  for (const auto& r : rows) n += r.within ? 1 : 0;
  return n;
}

bool CrossReport::accepted() const { return !rows.empty() && within_count() == rows.size(); }

CrossReport cross_check(const std::string& ours_text, const std::string& ours_name, const std::string& published_text,
                        const std::string& published_name, double tolerance, double min_bytes) {
  const json ours_doc = parse_json(ours_text, ours_name), pub_doc = parse_json(published_text, published_name);
  CrossReport r;
  r.tolerance = tolerance;
  r.format = format_of(ours_doc, ours_name);
  const std::string pub_format = format_of(pub_doc, published_name);
  if (pub_format != r.format)
    throw ConfigError(published_name, "", "is a " + pub_format + " file but " + ours_name + " is a " + r.format +
                                              " file; compare files of the same format");
  auto ours = r.format == "kernels" ? kernel_times(ours_text, ours_name) : comm_times(ours_doc, ours_name, min_bytes);
  auto pub = r.format == "kernels" ? kernel_times(published_text, published_name)
                                   : comm_times(pub_doc, published_name, min_bytes);
  std::map<std::string, double> pub_by;
  for (const auto& [k, t] : pub) pub_by.emplace(k, t);
  std::map<std::string, bool> used;
  for (const auto& [k, t] : ours) {
    auto it = pub_by.find(k);
    if (it == pub_by.end()) {
      r.only_ours.push_back(k);
      continue;
    }
    used[k] = true;
    const double ratio = t / it->second;
    r.rows.push_back({k, t, it->second, ratio, std::fabs(ratio - 1) <= tolerance});
  }
  for (const auto& [k, t] : pub)
    if (!used.count(k)) r.only_published.push_back(k);
  return r;
}

std::string format_report(const CrossReport& r) {
  std::string out = strprintf("cross-check of %s results: ours vs published (time per call)\n", r.format.c_str());
  out += strprintf("%-12s %-12s %7s  %-6s %s\n", "ours_us", "published_us", "ratio", "verdict", "entry");
  for (const auto& row : r.rows)
    out += strprintf("%-12.3f %-12.3f %7.3f  %-6s  %s\n", row.ours_s * 1e6, row.published_s * 1e6, row.ratio,
                     row.within ? "ok" : "OUT", row.what.c_str());
  out += strprintf("unmatched: %zu only in ours, %zu only in published\n", r.only_ours.size(), r.only_published.size());
  out += strprintf("acceptance (±%.0f %%): %s, %zu of %zu within\n", r.tolerance * 100, r.accepted() ? "PASS" : "FAIL",
                   r.within_count(), r.rows.size());
  return out;
}

}  // namespace trainsim::tools
