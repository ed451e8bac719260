// GEMM grid documents → GemmModel in a system's op class.
#include "inputs/model_merge.h"

#include <algorithm>

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <stdexcept>
#include <vector>

#include "compute/grouped_screen.h"
#include "inputs/json_reader.h"
#include "core/error.h"
#include "core/text.h"

namespace trainsim {

namespace {

// The header both measured-grid documents share (system build --gemm-grid, --grouped-grid):
// kind, op of the expected family, device, dtype and provenance, checked against the base system;
// `data_key` is the array the caller reads itself. Seeds the model's provenance record.
struct GridHeader {
  std::string op;
  nlohmann::json provenance = nlohmann::json::object();
};

GridHeader read_grid_header(const nlohmann::json& doc, const SystemConfig& sys, IssueList& issues,
                            const std::string& source, const char* kind_expected, OpFamily family,
                            const char* ops_text, const char* data_key, const char* fitted_by) {
  ObjectReader r(doc, "", issues);
  std::string kind, device, dtype;
  GridHeader h;
  r.req("kind", kind);
  r.req("op", h.op);
  r.req("device", device);
  r.opt("dtype", dtype);
  nlohmann::json prov = nlohmann::json::object();
  if (const nlohmann::json* p = r.object("provenance", false)) prov = *p;
  r.ignore(data_key);
  if (family == OpFamily::Gemm) r.ignore("waves");  // read by merge_gemm_grid
  r.finish();
  if (!kind.empty() && kind != kind_expected)
    issues.add("/kind", std::string("expected \"") + kind_expected + "\", got \"" + kind + "\"");
  const std::optional<OpClass> cls = find_op_class(h.op);
  if (!h.op.empty() && (!cls || op_row(*cls).family != family))
    issues.add("/op", std::string("expected ") + ops_text + ", got '" + h.op + "'");
  else if (!h.op.empty() && sys.ops.find(h.op) == sys.ops.end())
    issues.add("/op", "the base system has no op class '" + h.op + "'; add it to the base (tflops, efficient_factor)");
  h.provenance["fitted_by"] = fitted_by;
  h.provenance["file"] = source;
  h.provenance["device"] = device;
  if (!dtype.empty()) h.provenance["dtype"] = dtype;
  if (!prov.empty()) h.provenance["source"] = prov;
  return h;
}

}  // namespace

void merge_gemm_grid(SystemConfig& sys, const std::string& text, const std::string& source) {
  const nlohmann::json doc = parse_json(text, source);
  IssueList issues(source);
  const GridHeader h = read_grid_header(doc, sys, issues, source, "trainsim-gemm-grid", OpFamily::Gemm,
                                        "matmul or fp8_matmul (dense GEMM op classes)", "points",
                                        "trainsim system build --gemm-grid");
  std::vector<GemmPoint> points;
  const auto it = doc.is_object() ? doc.find("points") : doc.end();
  if (!doc.is_object() || it == doc.end() || !it->is_array() || it->empty()) {
    issues.add("/points", "expected a non-empty array of [m, n, k, time_s] (seconds)");
  } else {
    for (size_t i = 0; i < it->size(); ++i) {
      const nlohmann::json& p = (*it)[i];
      bool ok = p.is_array() && p.size() == 4;
      for (size_t c = 0; ok && c < 4; ++c)
        ok = p[c].is_number() && std::isfinite(p[c].get<double>()) && p[c].get<double>() > 0;
      if (!ok) {
        issues.add("/points/" + std::to_string(i), "expected [m, n, k, time_s], four numbers > 0, got " + p.dump());
        break;
      }
      points.push_back({p[0].get<double>(), p[1].get<double>(), p[2].get<double>(), p[3].get<double>()});
    }
  }
  issues.throw_if_any();
  // Optional wave quantization of the GPU's kernels (compute/gemm_model.h): SMs and tile.
  GemmWaves waves;
  if (doc.is_object() && doc.contains("waves")) {
    ObjectReader wr(doc["waves"], "/waves", issues);
    wr.req("sm_count", waves.sms);
    wr.req("tile_m", waves.tile_m);
    wr.req("tile_n", waves.tile_n);
    wr.finish();
  }
  issues.throw_if_any();
  std::shared_ptr<GemmModel> model;
  try {
    model = std::make_shared<GemmModel>(points);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(source, "/points", e.what());
  }
  try {
    model->set_waves(waves);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(source, "/waves", e.what());
  }
  nlohmann::json mp = h.provenance;
  mp["points"] = model->points();
  mp["grid"] = std::to_string(model->m_axis().size()) + " m × " + std::to_string(model->n_axis().size()) + " n × " +
               std::to_string(model->k_axis().size()) + " k";
  ComputeOpConfig& c = sys.ops[h.op];
  // The model answers every dense GEMM key (its measured nodes exactly): per-shape entries
  // merged before it would only shadow it.
  if (!c.accurate.empty()) mp["replaced_entries"] = c.accurate.size();
  c.accurate = EfficiencyTable{};
  model->provenance_json = mp.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  c.gemm_model = std::move(model);
  refresh_fingerprint(sys);
}

nlohmann::json set_aside_screened(std::vector<GroupedSeries>& series) {
  nlohmann::json out = nlohmann::json::object();
  const std::vector<ScreenedSeries> screened = screen_grouped_series(series);
  if (screened.empty()) return out;
  nlohmann::json aside = nlohmann::json::array();
  for (const ScreenedSeries& sc : screened) {
    const GroupedSeries &s = series[sc.index], &o = series[sc.smaller];
    aside.push_back({{"experts", s.experts}, {"hidden", s.hidden}, {"inter", s.inter}, {"tokens", sc.tokens},
                     {"slower_than", nlohmann::json{{"hidden", o.hidden}, {"inter", o.inter}}},
                     {"throughput_ratio", std::round(sc.ratio * 100) / 100}});
  }
  for (auto sc = screened.rbegin(); sc != screened.rend(); ++sc)
    series.erase(series.begin() + static_cast<std::ptrdiff_t>(sc->index));
  out["series_set_aside"] = aside;
  out["screen"] = strprintf(
      "a series whose throughput at its largest token count >= %g per expert is below that of a smaller "
      "expert shape of the same expert count by more than %gx (compute/grouped_screen.h)",
      kGroupedScreenMinTokens, kGroupedScreenRatio);
  return out;
}

void merge_grouped_grid(SystemConfig& sys, const std::string& text, const std::string& source) {
  const nlohmann::json doc = parse_json(text, source);
  IssueList issues(source);
  const GridHeader h = read_grid_header(doc, sys, issues, source, "trainsim-grouped-grid", OpFamily::GroupedGemm,
                                        "group_matmul or fp8_group_matmul (grouped GEMM op classes)", "series",
                                        "trainsim system build --grouped-grid");
  std::vector<GroupedSeries> series;
  const auto it = doc.is_object() ? doc.find("series") : doc.end();
  if (!doc.is_object() || it == doc.end() || !it->is_array() || it->empty()) {
    issues.add("/series", "expected a non-empty array of {experts, hidden, inter, tokens, time_s}");
  } else {
    for (size_t i = 0; i < it->size(); ++i) {
      const std::string sp = "/series/" + std::to_string(i);
      ObjectReader rs((*it)[i], sp, issues);
      GroupedSeries s;
      rs.req("experts", s.experts);
      rs.req("hidden", s.hidden);
      rs.req("inter", s.inter);
      rs.ignore("tokens");
      rs.ignore("time_s");
      rs.finish();
      const nlohmann::json& e = (*it)[i];
      using Field = std::pair<const char*, std::vector<double>*>;
      for (const auto& [key, out] : {Field{"tokens", &s.tokens}, Field{"time_s", &s.time_s}}) {
        const nlohmann::json v = e.is_object() ? e.value(key, nlohmann::json()) : nlohmann::json();
        bool ok = v.is_array() && !v.empty();
        for (size_t c = 0; ok && c < v.size(); ++c) {
          ok = v[c].is_number() && std::isfinite(v[c].get<double>()) && v[c].get<double>() > 0;
          if (ok) out->push_back(v[c].get<double>());
        }
        if (!ok) issues.add(sp + "/" + key, "expected a non-empty array of numbers > 0, got " + v.dump());
      }
      series.push_back(std::move(s));
    }
  }
  issues.throw_if_any();
  const nlohmann::json screen = set_aside_screened(series);
  std::shared_ptr<GroupedModel> model;
  try {
    model = std::make_shared<GroupedModel>(std::move(series));
  } catch (const std::invalid_argument& e) {
    throw ConfigError(source, "/series", e.what());
  }
  nlohmann::json mp = h.provenance;
  mp["points"] = model->points();
  mp["series"] = model->series().size();
  mp.update(screen);
  ComputeOpConfig& c = sys.ops[h.op];
  if (!c.accurate.empty()) mp["replaced_entries"] = c.accurate.size();
  if (c.point_model) mp["replaced_model"] = "points of " + std::to_string(c.point_model->points()) + " shapes";
  c.accurate = EfficiencyTable{};
  c.point_model = nullptr;
  model->provenance_json = mp.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  c.grouped_model = std::move(model);
  refresh_fingerprint(sys);
}

std::vector<std::string> merge_measured_system(SystemConfig& sys, const SystemConfig& src, const std::string& source,
                                               const std::vector<std::string>& ops) {
  std::vector<std::string> wanted = ops;
  if (wanted.empty())
    for (const auto& name : keyed_ops())
      if (const auto it = src.ops.find(name); it != src.ops.end() && !it->second.accurate.empty()) wanted.push_back(name);
  if (wanted.empty())
    throw ConfigError(source, "/accelerator/op",
                      "no op class has measured entries (accurate_efficient_factor) to fit a model on; give a system "
                      "file measured per shape (e.g. a SimuMax system file), --take-from FILE --take CLASSES for classes "
                      "that carry fitted models, or leave --measured-system out");
  std::vector<std::string> done;
  for (const auto& name : wanted) {
    const auto from = src.ops.find(name);
    if (from == src.ops.end() || from->second.accurate.empty()) {
      const bool modelled = from != src.ops.end() &&
                            (from->second.gemm_model || from->second.point_model || from->second.grouped_model);
      throw ConfigError(source, "/accelerator/op/" + name + "/accurate_efficient_factor",
                        "no measured entries of op class '" + name + "' to fit a model on" +
                            (modelled ? "; it carries a fitted model, which --take-from (this file) --take " + name +
                                            " takes whole"
                                      : std::string()));
    }
    const auto to = sys.ops.find(name);
    if (to == sys.ops.end())
      throw ConfigError(source, "/accelerator/op/" + name,
                        "the base system has no op class '" + name + "'; add it to the base (tflops, efficient_factor)");
    ComputeOpConfig& c = to->second;
    const double scale = from->second.peak_flops / c.peak_flops;
    std::vector<std::pair<PackedKey, double>> points;
    KeyKind kind = KeyKind::None;
    size_t unreadable = 0;
    for (const auto& [text, eff] : from->second.accurate.entries()) {
      const std::optional<PackedKey> key = pack_shape_key(text);
      if (!key) {
        ++unreadable;
        continue;
      }
      kind = key->kind;
      points.emplace_back(*key, eff * scale);
    }
    std::shared_ptr<PointModel> model;
    try {
      model = std::make_shared<PointModel>(kind, std::move(points));
    } catch (const std::invalid_argument& e) {
      throw ConfigError(source, "/accelerator/op/" + name + "/accurate_efficient_factor", e.what());
    }
    nlohmann::json mp = nlohmann::json::object();
    mp["fitted_by"] = "trainsim system build --measured-system";
    mp["file"] = source;
    mp["sys_name"] = src.sys_name;
    if (!src.description.empty()) mp["description"] = src.description;
    mp["family"] = point_family_name(kind);
    mp["points"] = model->points();
    if (unreadable) mp["unreadable_entries"] = unreadable;
    mp["source_tflops"] = from->second.peak_flops / 1e12;
    if (!c.accurate.empty()) mp["replaced_entries"] = c.accurate.size();
    if (c.gemm_model) mp["replaced_model"] = "gemm_grid of " + std::to_string(c.gemm_model->points()) + " points";
    model->provenance_json = mp.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    c.accurate = EfficiencyTable{};
    if (c.grouped_model)
      mp["replaced_model"] = "grouped_grid of " + std::to_string(c.grouped_model->points()) + " points";
    c.gemm_model = nullptr;
    c.grouped_model = nullptr;
    c.point_model = std::move(model);
    done.push_back(name);
  }
  refresh_fingerprint(sys);
  return done;
}

std::vector<std::string> merge_measured_bandwidths(SystemConfig& sys, const SystemConfig& src, const std::string& source,
                                                   const std::vector<std::string>& classes) {
  nlohmann::json prov = sys.provenance_json.empty() ? nlohmann::json::object()
                                                    : nlohmann::json::parse(sys.provenance_json, nullptr, false);
  if (!prov.is_object()) prov = nlohmann::json::object();
  nlohmann::json bp = nlohmann::json::object();
  bp["file"] = source;
  bp["sys_name"] = src.sys_name;
  bp["rule"] = "the source's effective bandwidth (gbps x efficient_factor) and latency_us per launch; the base's "
               "gbps (the datasheet peak), efficient_factor = effective / gbps";
  std::vector<std::string> done;
  for (const auto& name : classes) {
    const auto from = src.bandwidths.find(name);
    if (from == src.bandwidths.end())
      throw ConfigError(source, "/accelerator/bandwidth/" + name, "no bandwidth class '" + name + "' to take");
    const auto to = sys.bandwidths.find(name);
    if (to == sys.bandwidths.end())
      throw ConfigError(source, "/accelerator/bandwidth/" + name,
                        "the base system has no bandwidth class '" + name + "'; add it to the base (gbps, "
                        "efficient_factor, latency_us)");
    const BandwidthConfig& f = from->second;
    BandwidthConfig& c = to->second;
    const double effective = f.bytes_per_s * f.efficient_factor;
    if (c.bytes_per_s <= 0 || effective > c.bytes_per_s)
      throw ConfigError(source, "/accelerator/bandwidth/" + name,
                        strprintf("its effective bandwidth %.2f GiB/s exceeds the base's peak %.2f GiB/s; check the "
                                  "units of gbps (GiB/s)",
                                  effective / kGiB, c.bytes_per_s / kGiB));
    nlohmann::json e = nlohmann::json::object();
    e["source_gbps"] = f.bytes_per_s / kGiB;
    e["source_efficient_factor"] = f.efficient_factor;
    e["replaced_efficient_factor"] = c.efficient_factor;
    e["replaced_latency_us"] = c.latency_s * 1e6;
    // The source's latency per launch reproduces kernels timed eagerly (for SimuMax's, from
    // PyTorch: host launch overhead included); inside a CUDA graph only the device's floor is
    // paid. Without a graph floor of the source's own, the base's floor per kernel stays the
    // graph floor (assumed, to be measured: kernels_bench --launch-floor).
    const bool own_graph = f.graph_latency_s.has_value();
    c.graph_latency_s = own_graph ? *f.graph_latency_s : c.launch_floor_s(true);
    c.efficient_factor = effective / c.bytes_per_s;
    c.latency_s = f.latency_s;
    e["efficient_factor"] = c.efficient_factor;
    e["latency_us"] = c.latency_s * 1e6;
    e["graph_latency_us"] = *c.graph_latency_s * 1e6;
    e["graph_latency_source"] = own_graph ? "the source's graph_latency_us (" + src.sys_name + ")"
                                          : std::string("the base's floor per kernel; assumed, to be measured");
    bp["classes"][name] = e;
    done.push_back(name);
  }
  prov["measured_bandwidths"] = bp;
  sys.provenance_json = prov.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  refresh_fingerprint(sys);
  return done;
}

std::vector<std::string> take_from_system(SystemConfig& sys, const SystemConfig& src, const std::string& source,
                                          const std::vector<std::string>& names) {
  std::vector<std::string> done;
  for (const auto& name : names) {
    if (const auto op = src.ops.find(name); op != src.ops.end()) {
      sys.ops[name] = op->second;
    } else if (const auto net = src.networks.find(name); net != src.networks.end()) {
      sys.networks[name] = net->second;
    } else {
      std::vector<std::string> have;
      for (const auto& [n, c] : src.ops) have.push_back(n);
      for (const auto& [n, c] : src.networks) have.push_back(n);
      const bool network = std::find(std::begin(kNetworkGroups), std::end(kNetworkGroups), name) != std::end(kNetworkGroups);
      throw ConfigError(source, network ? "/networks/" + name : "/accelerator/op/" + name,
                        std::string(network ? "no network '" : "no op class '") + name + "' to take; it has: " +
                            join(have, ", "));
    }
    done.push_back(name);
  }
  nlohmann::json prov = sys.provenance_json.empty() ? nlohmann::json::object()
                                                    : nlohmann::json::parse(sys.provenance_json, nullptr, false);
  if (!prov.is_object()) prov = nlohmann::json::object();
  prov["taken"] = {{"file", source}, {"sys_name", src.sys_name}, {"names", done}};
  sys.provenance_json = prov.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  refresh_fingerprint(sys);
  return done;
}

std::vector<std::string> model_summaries(const SystemConfig& sys) {
  std::vector<std::string> out;
  for (const auto& [name, op] : sys.ops) {
    if (op.point_model) {
      // "sdp_fwd: attention model of 32 measured shapes (b200_bf16_ceperm, SimuMax v1.2 ...)"
      std::string line = name + ": " + point_family_name(op.point_model->kind()) + " model of " +
                         std::to_string(op.point_model->points()) + " measured shapes";
      const auto prov = nlohmann::json::parse(
          op.point_model->provenance_json.empty() ? "{}" : op.point_model->provenance_json, nullptr, false);
      std::vector<std::string> from;
      for (const char* key : {"sys_name", "file"}) {
        if (!prov.is_object() || !prov.contains(key) || !prov[key].is_string()) continue;
        std::string v = prov[key].get<std::string>();
        if (const size_t slash = v.find_last_of('/'); slash != std::string::npos) v = v.substr(slash + 1);
        from.push_back(v);
      }
      if (!from.empty()) line += " (" + join(from, ", ") + ")";
      out.push_back(line);
      continue;
    }
    if (op.grouped_model) {
      // "fp8_group_matmul: grouped GEMM model of 4,104 measured points in 152 expert shapes
      // (aiconfigurator-core 0.12.0, NVIDIA B200)"
      std::string points = std::to_string(op.grouped_model->points());
      for (int i = static_cast<int>(points.size()) - 3; i > 0; i -= 3) points.insert(static_cast<size_t>(i), ",");
      std::string line = name + ": grouped GEMM model of " + points + " measured points in " +
                         std::to_string(op.grouped_model->series().size()) + " expert shapes";
      const auto prov = nlohmann::json::parse(
          op.grouped_model->provenance_json.empty() ? "{}" : op.grouped_model->provenance_json, nullptr, false);
      std::vector<std::string> from;
      if (prov.is_object()) {
        const nlohmann::json src = prov.value("source", nlohmann::json::object());
        if (src.is_object() && src.value("package", "") != "")
          from.push_back(src.value("package", "") + " " + src.value("version", ""));
        if (prov.value("device", "") != "") from.push_back(prov.value("device", ""));
      }
      if (!from.empty()) line += " (" + join(from, ", ") + ")";
      out.push_back(line);
      continue;
    }
    if (!op.gemm_model) continue;
    std::string points = std::to_string(op.gemm_model->points());
    for (int i = static_cast<int>(points.size()) - 3; i > 0; i -= 3) points.insert(static_cast<size_t>(i), ",");
    std::string line = name + ": GEMM model of " + points + " measured points";
    std::vector<std::string> from;
    const std::string& text_of = op.gemm_model->provenance_json;
    const auto prov = nlohmann::json::parse(text_of.empty() ? "{}" : text_of, nullptr, false);
    if (prov.is_object()) {
      const auto text = [](const nlohmann::json& j, const char* key) {
        return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
      };
      const nlohmann::json src = prov.contains("source") ? prov["source"] : nlohmann::json();
      std::string package = text(src, "package");
      if (!package.empty() && !text(src, "version").empty()) package += " " + text(src, "version");
      if (!package.empty()) from.push_back(package);
      if (!text(prov, "device").empty()) from.push_back(text(prov, "device"));
    }
    if (!from.empty()) line += " (" + join(from, ", ") + ")";
    out.push_back(line);
  }
  // "high_intra_node: collective models of all2all, all_reduce from 126 measured points (group
  // sizes 2, 4, 8; aiconfigurator-core 0.12.0, NCCL 2.29.2, NVIDIA H100 80GB HBM3)"
  for (const auto& [net_name, net] : sys.networks) {
    std::vector<std::string> ops, from;
    std::vector<int64_t> ns;
    size_t points = 0;
    for (const auto& [op_name, op] : net.ops) {
      if (!op.model) continue;
      ops.push_back(op_name);
      points += op.model->points();
      for (const auto& c : op.model->curves())
        if (std::find(ns.begin(), ns.end(), c.n()) == ns.end()) ns.push_back(c.n());
      if (!from.empty()) continue;
      const auto prov = nlohmann::json::parse(op.model->provenance_json.empty() ? "{}" : op.model->provenance_json,
                                              nullptr, false);
      if (!prov.is_object()) continue;
      const auto text = [](const nlohmann::json& j, const char* key) {
        return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
      };
      const nlohmann::json src =
          prov.contains("import") && prov["import"].is_object() ? prov["import"].value("source", nlohmann::json())
                                                                : nlohmann::json();
      if (!text(src, "package").empty()) from.push_back(text(src, "package") + " " + text(src, "version"));
      if (!text(prov, "nccl_version").empty()) from.push_back("NCCL " + text(prov, "nccl_version"));
      if (!text(prov, "gpu").empty()) from.push_back(text(prov, "gpu"));
    }
    if (ops.empty()) continue;
    std::sort(ns.begin(), ns.end());
    std::vector<std::string> sizes;
    for (int64_t n : ns) sizes.push_back(std::to_string(n));
    from.insert(from.begin(), "group sizes " + join(sizes, ", "));
    out.push_back(net_name + ": collective models of " + join(ops, ", ") + " from " + std::to_string(points) +
                  " measured points (" + join(from, "; ") + ")");
  }
  return out;
}

}  // namespace trainsim
