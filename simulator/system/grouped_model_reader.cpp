// Reader of a grouped-GEMM model in a system file (see grouped_model_reader.h).
#include "system/grouped_model_reader.h"

#include <cmath>
#include <utility>
#include <vector>

#include "core/units.h"

namespace trainsim {
namespace {

using nlohmann::json;

// An array of numbers > 0 at `path`; false (with the issue) otherwise.
bool positive_numbers(const json& j, const std::string& path, IssueList& issues, std::vector<double>& out) {
  if (!j.is_array()) {
    issues.add(path, "expected an array of numbers");
    return false;
  }
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_number() || !(j[i].get<double>() > 0) || !std::isfinite(j[i].get<double>())) {
      issues.add(path + "/" + std::to_string(i), "expected a number > 0, got " + j[i].dump());
      return false;
    }
    out.push_back(j[i].get<double>());
  }
  return true;
}

}  // namespace

// `accelerator.op.<op>.model` of kind grouped_grid: measured expert shapes
// (compute/grouped_model.h), {"series": [{"experts", "hidden", "inter", "tokens", "time_us"}]}.
std::shared_ptr<const GroupedModel> read_grouped_model(const json& j, const std::string& path, OpClass cls,
                                                       IssueList& issues) {
  ObjectReader r(j, path, issues);
  std::string kind;
  r.req("kind", kind);
  std::string provenance;
  if (const json* prov = r.object("provenance", false)) provenance = prov->dump();
  const json* series = r.has("series") ? &j["series"] : nullptr;
  r.ignore("series");
  r.finish();
  if (op_row(cls).family != OpFamily::GroupedGemm) {
    issues.add(path, "a grouped_grid model answers grouped GEMM shape keys: only the op classes group_matmul and "
                     "fp8_group_matmul carry one, not '" + std::string(op_name(cls)) + "'");
    return nullptr;
  }
  if (!series || !series->is_array() || series->empty()) {
    issues.add(path + "/series", "expected a non-empty array of {experts, hidden, inter, tokens, time_us}");
    return nullptr;
  }
  std::vector<GroupedSeries> all;
  for (size_t i = 0; i < series->size(); ++i) {
    const std::string sp = path + "/series/" + std::to_string(i);
    const json& e = (*series)[i];
    ObjectReader rs(e, sp, issues);
    GroupedSeries s;
    rs.req("experts", s.experts);
    rs.req("hidden", s.hidden);
    rs.req("inter", s.inter);
    rs.ignore("tokens");
    rs.ignore("time_us");
    rs.finish();
    if (!e.is_object() || !positive_numbers(e.value("tokens", json()), sp + "/tokens", issues, s.tokens) ||
        !positive_numbers(e.value("time_us", json()), sp + "/time_us", issues, s.time_s))
      return nullptr;
    for (double& t : s.time_s) t *= kMicro;
    all.push_back(std::move(s));
  }
  try {
    auto model = std::make_shared<GroupedModel>(std::move(all));
    model->provenance_json = provenance;
    return model;
  } catch (const std::invalid_argument& e) {
    issues.add(path + "/series", e.what());
    return nullptr;
  }
}

}  // namespace trainsim
