// GEMM grid documents → GemmModel in a system's op class.
#include "inputs/model_merge.h"

#include <cmath>
#include <memory>
#include <string>
#include <stdexcept>
#include <vector>

#include "inputs/json_reader.h"
#include "core/error.h"
#include "core/text.h"

namespace trainsim {

void merge_gemm_grid(SystemConfig& sys, const std::string& text, const std::string& source) {
  const nlohmann::json doc = parse_json(text, source);
  IssueList issues(source);
  ObjectReader r(doc, "", issues);
  std::string kind, op, device, dtype;
  r.req("kind", kind);
  r.req("op", op);
  r.req("device", device);
  r.opt("dtype", dtype);
  nlohmann::json prov = nlohmann::json::object();
  if (const nlohmann::json* p = r.object("provenance", false)) prov = *p;
  r.ignore("points");
  r.finish();
  if (!kind.empty() && kind != "trainsim-gemm-grid")
    issues.add("/kind", "expected \"trainsim-gemm-grid\", got \"" + kind + "\"");
  if (!op.empty() && op != "matmul" && op != "fp8_matmul")
    issues.add("/op", "expected matmul or fp8_matmul (dense GEMM op classes), got '" + op + "'");
  else if (!op.empty() && sys.ops.find(op) == sys.ops.end())
    issues.add("/op", "the base system has no op class '" + op + "'; add it to the base (tflops, efficient_factor)");
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
  std::shared_ptr<GemmModel> model;
  try {
    model = std::make_shared<GemmModel>(points);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(source, "/points", e.what());
  }
  nlohmann::json mp = nlohmann::json::object();
  mp["fitted_by"] = "trainsim system build --gemm-grid";
  mp["file"] = source;
  mp["device"] = device;
  if (!dtype.empty()) mp["dtype"] = dtype;
  mp["points"] = model->points();
  mp["grid"] = std::to_string(model->m_axis().size()) + " m × " + std::to_string(model->n_axis().size()) + " n × " +
               std::to_string(model->k_axis().size()) + " k";
  if (!prov.empty()) mp["source"] = prov;
  ComputeOpConfig& c = sys.ops[op];
  // The model answers every dense GEMM key (its measured nodes exactly): per-shape entries
  // merged before it would only shadow it.
  if (!c.accurate.empty()) mp["replaced_entries"] = c.accurate.size();
  c.accurate = EfficiencyTable{};
  model->provenance_json = mp.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  c.gemm_model = std::move(model);
  refresh_fingerprint(sys);
}

std::vector<std::string> model_summaries(const SystemConfig& sys) {
  std::vector<std::string> out;
  for (const auto& [name, op] : sys.ops) {
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
  return out;
}

}  // namespace trainsim
