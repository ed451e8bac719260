// Calibration grids (kernels_bench --grid) and the models system build fits from their results.
#include "calibration/kernel_grid.h"

#include "inputs/model_merge.h"

#include <algorithm>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>
#include <variant>

#include <nlohmann/json.hpp>

#include "calibration/op_class.h"
#include "compute/gemm_model.h"
#include "compute/grouped_model.h"
#include "compute/point_model.h"
#include "core/error.h"
#include "core/text.h"
#include "inputs/json_reader.h"

namespace trainsim {
namespace {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const size_t end = comma == std::string::npos ? text.size() : comma;
    out.push_back(text.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

ShapeEntry entry(const std::string& op, ShapeKey shape) {
  ShapeEntry e;
  e.op = op;
  e.key = format_shape_key(shape);
  e.flops = shape_flops(op, shape);
  e.shape = std::move(shape);
  e.count = 1;
  return e;
}

int64_t i64(double v) { return static_cast<int64_t>(v); }

void add_gemm(std::vector<ShapeEntry>& out, bool fp8) {
  for (double m : kGridGemmM)
    for (double n : kGridGemmNK)
      for (double k : kGridGemmNK) {
        MatmulShape s;
        s.b = 1;
        s.m = i64(m);
        s.k = i64(k);
        s.n = i64(n);
        s.layout = "TN";
        s.out_dtype = "bf16";
        out.push_back(entry(fp8 ? "fp8_matmul" : "matmul", s));
      }
}

void add_grouped(std::vector<ShapeEntry>& out, bool fp8) {
  const std::string op = fp8 ? "fp8_group_matmul" : "group_matmul";
  for (const GridSeries& s : grid_series())
    for (double m : kGridTokensPerExpert)
      for (const auto& [n, k] : {std::pair{2 * s.inter, s.hidden}, std::pair{s.hidden, s.inter}}) {
        const std::string key = grid_grouped_key(s.experts, m, n, k, fp8);
        ShapeKey shape = parse_shape_key(op, key, "kernel grid", "/grouped");
        out.push_back(entry(op, std::move(shape)));
      }
}

void add_attention(std::vector<ShapeEntry>& out) {
  for (const char* op : {"sdp_fwd", "sdp_bwd"})
    for (double heads : kGridAttnHeads)
      for (const auto& dims : kGridAttnDims)
        for (double gqa : kGridAttnGqa) {
          if (dims[0] != dims[1] && gqa != 1) continue;  // MLA: no GQA
          for (double seq : kGridAttnSeq) {
            SdpaShape s;
            s.batch = 1;
            s.seq_len = i64(seq);
            s.head_num = i64(heads);
            s.kv_head_num = i64(heads / gqa);
            s.qk_head_dim = i64(dims[0]);
            s.v_head_dim = i64(dims[1]);
            out.push_back(entry(op, s));
          }
        }
}

template <size_t N>
nlohmann::json axis(const double (&values)[N]) {
  nlohmann::json a = nlohmann::json::array();
  for (double v : values) a.push_back(v);
  return a;
}

// The provenance record of one fitted model.
nlohmann::json model_provenance(const KernelsDoc& doc, const std::string& source, const char* dtype) {
  const nlohmann::json kp = nlohmann::json::parse(doc.provenance_json.empty() ? "{}" : doc.provenance_json);
  nlohmann::json p;
  p["fitted_by"] = "trainsim system build --kernels (kernels_bench --grid results)";
  p["file"] = source;
  p["device"] = doc.device.name;
  p["dtype"] = dtype;
  p["source"] = {{"package", "kernels_bench"},
                 {"version", kp.value("version", nlohmann::json(""))},
                 {"command", kp.value("command", nlohmann::json(""))},
                 {"date", kp.value("date", nlohmann::json(""))},
                 {"cuda_runtime_version", doc.device.cuda_runtime_version},
                 {"cublas_version", doc.device.cublas_version},
                 {"cudnn_version", doc.device.cudnn_version},
                 {"driver_version", doc.device.driver_version}};
  return p;
}

std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

// The ok compute results of op class `op` as key text → median seconds.
std::map<std::string, double> times_of(const KernelsDoc& doc, const std::string& op) {
  std::map<std::string, double> out;
  for (const auto& r : doc.results)
    if (r.kind == "compute" && r.status == "ok" && r.op == op && r.time.median > 0) out[r.key] = r.time.median;
  return out;
}

// The class keeps this run's measurements off the grid (a plan's shapes measured with it, looked
// up before the model); the grid's own are answered by the model, the base's came from elsewhere.
void keep_off_grid(ComputeOpConfig& c, const std::map<std::string, double>& times, const std::set<std::string>& on_grid) {
  EfficiencyTable kept;
  for (const auto& [key, t] : times)
    if (!on_grid.count(key)) kept.set(key, c.accurate.at(key));
  c.accurate = std::move(kept);
}

std::set<double> axis_set(const nlohmann::json& values) {
  std::set<double> out;
  for (const auto& v : values)
    if (v.is_number()) out.insert(v.get<double>());
  return out;
}

void fit_gemm(SystemConfig& sys, const KernelsDoc& doc, const std::string& source, const nlohmann::json& grid,
              const std::string& op, std::vector<std::string>& lines) {
  const std::map<std::string, double> times = times_of(doc, op);
  auto it = sys.ops.find(op);
  if (times.empty() || it == sys.ops.end() || !grid.contains("gemm")) return;
  const nlohmann::json& g = grid["gemm"];
  const std::set<double> ms = axis_set(g.value("m", nlohmann::json())), ns = axis_set(g.value("n", nlohmann::json())),
                         ks = axis_set(g.value("k", nlohmann::json()));
  std::vector<GemmPoint> points;
  std::set<std::string> on_grid;
  for (const auto& [key, t] : times) {
    const auto s = std::get<MatmulShape>(parse_shape_key(op, key, source, "/results"));
    const auto m = static_cast<double>(s.m), n = static_cast<double>(s.n), k = static_cast<double>(s.k);
    if (s.b != 1 || s.layout != "TN" || !ms.count(m) || !ns.count(n) || !ks.count(k)) continue;
    points.push_back({m, n, k, t});
    on_grid.insert(key);
  }
  if (points.empty()) return;
  std::shared_ptr<GemmModel> model;
  try {
    model = std::make_shared<GemmModel>(points);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(source, "/results", op + ": " + e.what());
  }
  nlohmann::json p = model_provenance(doc, source, is_fp8_op(op) ? "fp8" : "bf16");
  p["points"] = model->points();
  p["grid"] = strprintf("%zu m × %zu n × %zu k", model->m_axis().size(), model->n_axis().size(), model->k_axis().size());
  model->provenance_json = dump(p);
  ComputeOpConfig& c = it->second;
  keep_off_grid(c, times, on_grid);
  c.point_model = nullptr;
  c.grouped_model = nullptr;
  c.gemm_model = std::move(model);
  lines.push_back(strprintf("%s: gemm_grid of %zu measured points", op.c_str(), points.size()));
}

void fit_grouped(SystemConfig& sys, const KernelsDoc& doc, const std::string& source, const nlohmann::json& grid,
                 const std::string& op, std::vector<std::string>& lines) {
  const bool fp8 = is_fp8_op(op);
  const std::map<std::string, double> times = times_of(doc, op);
  auto it = sys.ops.find(op);
  if (times.empty() || it == sys.ops.end() || !grid.contains("grouped")) return;
  const nlohmann::json g = grid.value("grouped", nlohmann::json::object());
  std::vector<GroupedSeries> series;
  std::set<std::string> on_grid;
  size_t points = 0;
  for (const auto& s : g.value("series", nlohmann::json::array())) {
    GroupedSeries gs;
    gs.experts = s.value("experts", 0.0);
    gs.hidden = s.value("hidden", 0.0);
    gs.inter = s.value("inter", 0.0);
    for (const auto& m : g.value("tokens", nlohmann::json::array())) {
      const auto up = times.find(grid_grouped_key(gs.experts, m.get<double>(), 2 * gs.inter, gs.hidden, fp8));
      const auto down = times.find(grid_grouped_key(gs.experts, m.get<double>(), gs.hidden, gs.inter, fp8));
      if (up == times.end() || down == times.end()) continue;
      on_grid.insert(up->first);
      on_grid.insert(down->first);
      gs.tokens.push_back(m.get<double>());
      gs.time_s.push_back(up->second + down->second);
    }
    points += gs.tokens.size();
    if (!gs.tokens.empty()) series.push_back(std::move(gs));
  }
  if (series.empty()) {  // a run cut short by its budget: the per-shape entries stay
    lines.push_back(op + ": no grouped_grid (no expert shape has both GEMMs measured); per-shape entries kept");
    return;
  }
  const nlohmann::json screen = set_aside_screened(series);
  std::shared_ptr<GroupedModel> model;
  try {
    model = std::make_shared<GroupedModel>(std::move(series));
  } catch (const std::invalid_argument& e) {
    throw ConfigError(source, "/results", op + ": " + e.what());
  }
  nlohmann::json p = model_provenance(doc, source, fp8 ? "fp8" : "bf16");
  p.update(screen);
  p["points"] = model->points();
  p["series"] = model->series().size();
  p["time_s"] = "gated up projection (n = 2I, k = h) + down projection (n = h, k = I), timed apart, stage fwd";
  model->provenance_json = dump(p);
  ComputeOpConfig& c = it->second;
  keep_off_grid(c, times, on_grid);
  c.point_model = nullptr;
  c.gemm_model = nullptr;
  c.grouped_model = std::move(model);
  lines.push_back(strprintf("%s: grouped_grid of %zu measured points", op.c_str(), points));
}

// Attention: the efficiencies merge_kernels set from the results become a points model.
void fit_attention(SystemConfig& sys, const KernelsDoc& doc, const std::string& source, const nlohmann::json& grid,
                   const std::string& op, std::vector<std::string>& lines) {
  auto it = sys.ops.find(op);
  const std::map<std::string, double> times = times_of(doc, op);
  if (it == sys.ops.end() || times.empty() || !grid.contains("attention")) return;
  ComputeOpConfig& c = it->second;
  // This run's shapes (the grid's and any measured with it), not the base's (measured elsewhere).
  std::vector<std::pair<PackedKey, double>> points;
  for (const auto& [text, t] : times)
    if (const std::optional<PackedKey> key = pack_shape_key(text)) points.emplace_back(*key, c.accurate.at(text));
  std::shared_ptr<PointModel> model;
  try {
    model = std::make_shared<PointModel>(KeyKind::Sdpa, std::move(points));
  } catch (const std::invalid_argument& e) {
    throw ConfigError(source, "/results", op + ": " + e.what());
  }
  nlohmann::json p = model_provenance(doc, source, "bf16");
  p["family"] = "attention";
  p["points"] = model->points();
  p["sys_name"] = "kernels_bench grid";
  model->provenance_json = dump(p);
  c.accurate = EfficiencyTable{};
  c.gemm_model = nullptr;
  c.grouped_model = nullptr;
  lines.push_back(strprintf("%s: points of %zu measured shapes", op.c_str(), model->points()));
  c.point_model = std::move(model);
}

// The grid description kernels_bench --grid writes under provenance.grid (grid_description_json):
// the families the fits read must be objects and their axes arrays of numbers, each series an
// object of numbers. Checked before the fits read them (a wrong type was an internal error).
void check_grid_description(const nlohmann::json& grid, const std::string& source) {
  IssueList issues(source);
  const std::string at = "/provenance/grid";
  const auto got = [](const nlohmann::json& v) {
    const std::string t = v.type_name();
    return ", got " + (v.is_null() ? t : (t[0] == 'a' || t[0] == 'o' ? "an " : "a ") + t);
  };
  const char* as_written = " (as kernels_bench --grid writes it)";
  const auto numbers = [&](const nlohmann::json& parent, const char* key, const std::string& path) {
    if (!parent.contains(key)) return;
    const nlohmann::json& a = parent[key];
    if (!a.is_array()) {
      issues.add(path + "/" + key, "expected an array of numbers" + std::string(as_written) + got(a));
      return;
    }
    for (size_t i = 0; i < a.size(); ++i)
      if (!a[i].is_number()) {
        issues.add(path + "/" + key + "/" + std::to_string(i), "expected a number" + got(a[i]));
        return;
      }
  };
  if (!grid.is_object()) {
    issues.add(at, "expected an object (the grid kernels_bench --grid ran)" + got(grid));
    issues.throw_if_any();
  }
  for (const char* family : {"gemm", "grouped", "attention", "memory"})
    if (grid.contains(family) && !grid[family].is_object())
      issues.add(at + "/" + family, "expected an object" + std::string(as_written) + got(grid[family]));
  if (grid.contains("gemm") && grid["gemm"].is_object())
    for (const char* axis_name : {"m", "n", "k"}) numbers(grid["gemm"], axis_name, at + "/gemm");
  if (grid.contains("grouped") && grid["grouped"].is_object()) {
    const nlohmann::json& g = grid["grouped"];
    numbers(g, "tokens", at + "/grouped");
    const nlohmann::json series = g.value("series", nlohmann::json::array());
    if (!series.is_array())
      issues.add(at + "/grouped/series", "expected an array of {experts, hidden, inter}" + got(series));
    for (size_t i = 0; series.is_array() && i < series.size(); ++i) {
      const nlohmann::json& s = series[i];
      const std::string sp = at + "/grouped/series/" + std::to_string(i);
      if (!s.is_object()) {
        issues.add(sp, "expected an object {experts, hidden, inter}" + got(s));
        continue;
      }
      for (const char* key : {"experts", "hidden", "inter"}) {
        if (!s.contains(key)) {
          issues.add(sp + "/" + key, "required number is missing");
        } else if (!s[key].is_number()) {
          issues.add(sp + "/" + key, "expected a number" + got(s[key]));
        }
      }
    }
  }
  issues.throw_if_any();
}

}  // namespace

GridSpec parse_grid_spec(const std::string& families, const std::string& dtypes) {
  GridSpec g;
  for (const std::string& f : split_list(families)) {
    if (f == "all") {
      g.gemm = g.grouped = g.attention = g.memory = true;
    } else if (f == "gemm") {
      g.gemm = true;
    } else if (f == "grouped") {
      g.grouped = true;
    } else if (f == "attention") {
      g.attention = true;
    } else if (f == "memory") {
      g.memory = true;
    } else {
      throw UsageError("--grid '" + families + "': unknown family '" + f +
                       "'; valid values: gemm, grouped, attention, memory, all (comma-separated)");
    }
  }
  for (const std::string& d : split_list(dtypes)) {
    if (d == "bf16") {
      g.bf16 = true;
    } else if (d == "fp8") {
      g.fp8 = true;
    } else {
      throw UsageError("--dtype '" + dtypes + "': unknown dtype '" + d + "'; valid values: bf16, fp8 (comma-separated)");
    }
  }
  if ((g.gemm || g.grouped) && !g.bf16 && !g.fp8) throw UsageError("--dtype: give bf16, fp8 or both");
  return g;
}

std::vector<GridSeries> grid_series() {
  std::vector<GridSeries> out;
  for (const GridExpertShape& s : kGridExpertShapes)
    for (double e : kGridExpertsPerRank)
      if (e <= s.experts) out.push_back({e, s.hidden, s.inter});
  return out;
}

std::string grid_grouped_key(double experts, double tokens, double n, double k, bool fp8) {
  return format_packed_key(grouped_key(experts, tokens, n, k, fp8 ? KeyDtype::fp8 : KeyDtype::bf16, KeyDtype::bf16,
                                       KeyDtype::fp32, KeyStage::fwd, false, false, false, true));
}

std::vector<ShapeEntry> grid_compute_shapes(const GridSpec& spec) {
  std::vector<ShapeEntry> out;
  for (bool fp8 : {false, true}) {
    if (!(fp8 ? spec.fp8 : spec.bf16)) continue;
    if (spec.gemm) add_gemm(out, fp8);
  }
  for (bool fp8 : {false, true}) {
    if (!(fp8 ? spec.fp8 : spec.bf16)) continue;
    if (spec.grouped) add_grouped(out, fp8);
  }
  if (spec.attention) add_attention(out);
  return out;
}

namespace {

// Level of `v` on a sorted axis (grid_level); -1 when `v` is not on it.
template <size_t N>
int axis_level(const double (&axis)[N], double v) {
  for (size_t i = 0; i < N; ++i) {
    if (axis[i] != v) continue;
    if (N <= 4 || i % 4 == 0 || i == N - 1) return 0;
    return i % 2 == 0 ? 1 : 2;
  }
  return -1;
}

bool is_grid_expert(double hidden, double inter) {
  for (const GridExpertShape& s : kGridExpertShapes)
    if (s.hidden == hidden && s.inter == inter) return true;
  return false;
}

bool is_grid_dims(double qk, double v) {
  for (const auto& d : kGridAttnDims)
    if (d[0] == qk && d[1] == v) return true;
  return false;
}

}  // namespace

int grid_level(const ShapeKey& shape) {
  int level = -1;
  const auto worst = [&level](std::initializer_list<int> levels) {
    level = 0;
    for (int l : levels) {
      if (l < 0) {
        level = -1;
        return;
      }
      level = std::max(level, l);
    }
  };
  const auto d = [](int64_t v) { return static_cast<double>(v); };
  if (const auto* g = std::get_if<MatmulShape>(&shape)) {
    if (g->b != 1 || g->layout != "TN") return -1;
    worst({axis_level(kGridGemmM, d(g->m)), axis_level(kGridGemmNK, d(g->n)), axis_level(kGridGemmNK, d(g->k))});
  } else if (const auto* e = std::get_if<GroupedMatmulShape>(&shape)) {
    // The up projection (n = 2I, k = h) or the down projection (n = h, k = I) of a grid expert.
    const bool expert = (e->n % 2 == 0 && is_grid_expert(d(e->k), d(e->n / 2))) || is_grid_expert(d(e->n), d(e->k));
    if (!expert || e->stage != "fwd") return -1;
    worst({axis_level(kGridExpertsPerRank, d(e->ng)), axis_level(kGridTokensPerExpert, d(e->m))});
  } else if (const auto* a = std::get_if<SdpaShape>(&shape)) {
    if (a->batch != 1 || a->kv_head_num <= 0 || !is_grid_dims(d(a->qk_head_dim), d(a->v_head_dim))) return -1;
    worst({axis_level(kGridAttnHeads, d(a->head_num)), axis_level(kGridAttnGqa, d(a->head_num / a->kv_head_num)),
           axis_level(kGridAttnSeq, d(a->seq_len))});
  }
  return level;
}

std::string grid_description_json(const GridSpec& spec) {
  nlohmann::json g;
  std::vector<std::string> families, dtypes;
  if (spec.gemm) families.emplace_back("gemm");
  if (spec.grouped) families.emplace_back("grouped");
  if (spec.attention) families.emplace_back("attention");
  if (spec.memory) families.emplace_back("memory");
  if (spec.bf16) dtypes.emplace_back("bf16");
  if (spec.fp8) dtypes.emplace_back("fp8");
  g["families"] = families;
  g["dtypes"] = dtypes;
  if (spec.gemm) g["gemm"] = {{"m", axis(kGridGemmM)}, {"n", axis(kGridGemmNK)}, {"k", axis(kGridGemmNK)},
                              {"layout", "TN"}, {"out_dtype", "bf16"}};
  if (spec.grouped) {
    nlohmann::json series = nlohmann::json::array(), models = nlohmann::json::array();
    for (const GridSeries& s : grid_series())
      series.push_back({{"experts", s.experts}, {"hidden", s.hidden}, {"inter", s.inter}});
    for (const GridExpertShape& s : kGridExpertShapes)
      models.push_back({{"model", s.model}, {"hidden", s.hidden}, {"inter", s.inter}, {"experts", s.experts}});
    g["grouped"] = {{"series", series}, {"tokens", axis(kGridTokensPerExpert)}, {"expert_shapes", models},
                    {"gemms", "up n = 2I, k = h; down n = h, k = I; stage fwd"}};
  }
  if (spec.attention) {
    nlohmann::json dims = nlohmann::json::array();
    for (const auto& d : kGridAttnDims) dims.push_back({d[0], d[1]});
    g["attention"] = {{"batch", 1},          {"heads", axis(kGridAttnHeads)}, {"gqa_ratio", axis(kGridAttnGqa)},
                      {"seq", axis(kGridAttnSeq)}, {"head_dims", dims},       {"mask", "causal"},
                      {"note", "head dims (192, 128): GQA ratio 1 only"}};
  }
  if (spec.memory) g["memory"] = {{"copy_bytes", axis(kGridCopyBytes)}, {"tokens", axis(kGridMemTokens)}};
  return dump(g);
}

std::vector<std::string> merge_kernel_grid(SystemConfig& sys, const KernelsDoc& doc, const std::string& source) {
  std::vector<std::string> lines;
  const nlohmann::json kp = nlohmann::json::parse(doc.provenance_json.empty() ? "{}" : doc.provenance_json,
                                                  nullptr, false);
  if (!kp.is_object() || !kp.contains("grid")) return lines;
  const nlohmann::json& grid = kp["grid"];
  check_grid_description(grid, source);
  for (const char* op : {"matmul", "fp8_matmul"}) fit_gemm(sys, doc, source, grid, op, lines);
  for (const char* op : {"group_matmul", "fp8_group_matmul"}) fit_grouped(sys, doc, source, grid, op, lines);
  for (const char* op : {"sdp_fwd", "sdp_bwd"}) fit_attention(sys, doc, source, grid, op, lines);
  refresh_fingerprint(sys);
  return lines;
}

}  // namespace trainsim
