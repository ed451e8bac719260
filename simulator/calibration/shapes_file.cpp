// shapes.json reader and writer.
#include "calibration/shapes_file.h"

#include <map>

#include "inputs/json_reader.h"
#include "inputs/schema_version.h"
#include "core/text.h"

namespace trainsim {
namespace {

using nlohmann::json;

// Structured view of a key: integers as numbers, Python booleans as JSON booleans.
json shape_json(const ShapeKey& shape) {
  json j = json::object();
  for (const auto& [name, value] : shape_fields(shape)) {
    if (value == "True" || value == "False") {
      j[name] = value == "True";
    } else if (!value.empty() && value.find_first_not_of("0123456789") == std::string::npos) {
      j[name] = std::stoll(value);
    } else {
      j[name] = value;
    }
  }
  return j;
}

}  // namespace

std::string shapes_to_json_text(const ShapesDoc& doc) {
  json j;
  j["schema_version"] = doc.schema_version;
  j["kind"] = "trainsim-shapes";
  j["flops_convention"] =
      "simulator: GEMM 2*b*m*n*k; grouped 2*ng*M*N*K; SDPA fwd 2*B*S^2*max(h,h_kv)*(d_qk+d_v), "
      "bwd 2.5x fwd; no causal halving";
  if (!doc.system.empty()) j["system"] = doc.system;
  j["plans"] = json::array();
  for (const auto& p : doc.plans) j["plans"].push_back({{"model", p.model}, {"strategy", p.strategy}});
  std::map<std::string, int64_t> by_op, missing_by_op;
  j["shapes"] = json::array();
  for (const auto& s : doc.shapes) {
    json e;
    e["op"] = s.op;
    e["key"] = s.key;
    e["flops"] = s.flops;
    e["count"] = s.count;
    if (s.in_system) e["in_system"] = *s.in_system;
    e["plans"] = s.plans;
    e["shape"] = shape_json(s.shape);
    j["shapes"].push_back(e);
    ++by_op[s.op];
    if (s.in_system && !*s.in_system) ++missing_by_op[s.op];
  }
  json summary;
  summary["shapes"] = doc.shapes.size();
  summary["by_op"] = by_op;
  if (!doc.system.empty()) summary["missing_in_system_by_op"] = missing_by_op;
  j["summary"] = summary;
  if (!doc.provenance_json.empty()) j["provenance"] = json::parse(doc.provenance_json);
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

ShapesDoc load_shapes(const std::string& text, const std::string& source) {
  json doc = parse_json(text, source);
  IssueList issues(source);
  ShapesDoc out;
  ObjectReader top(doc, "", issues);
  top.req("schema_version", out.schema_version);
  check_schema_major(doc, "1", issues);
  std::string kind = "trainsim-shapes";
  top.opt("kind", kind);
  if (kind != "trainsim-shapes")
    issues.add("/kind", "expected 'trainsim-shapes', got '" + kind + "' (is this a shapes file?)");
  top.ignore("flops_convention");
  top.ignore("summary");
  top.opt("system", out.system);
  if (const json* prov = top.object("provenance", false)) out.provenance_json = prov->dump();
  top.ignore("plans");
  if (doc.is_object() && doc.contains("plans")) {
    const json& plans = doc["plans"];
    if (!plans.is_array()) issues.add("/plans", "expected an array of {model, strategy}");
    for (size_t i = 0; plans.is_array() && i < plans.size(); ++i) {
      ObjectReader r(plans[i], "/plans/" + std::to_string(i), issues);
      ShapePlan p;
      r.req("model", p.model);
      r.req("strategy", p.strategy);
      r.finish();
      out.plans.push_back(p);
    }
  }
  top.ignore("shapes");
  const json* shapes = doc.is_object() && doc.contains("shapes") ? &doc["shapes"] : nullptr;
  if (doc.is_object() && !shapes) issues.add("/shapes", "required array is missing");
  if (shapes && !shapes->is_array()) issues.add("/shapes", "expected an array of shape entries");
  std::map<std::pair<std::string, std::string>, size_t> seen;
  for (size_t i = 0; shapes && shapes->is_array() && i < shapes->size(); ++i) {
    std::string path = "/shapes/" + std::to_string(i);
    ObjectReader r((*shapes)[i], path, issues);
    ShapeEntry e;
    r.req("op", e.op);
    r.req("key", e.key);
    std::optional<double> flops;
    r.opt("flops", flops);
    r.opt("count", e.count);
    if (r.has("in_system")) {
      bool v = false;
      r.opt("in_system", v);
      e.in_system = v;
    } else {
      r.ignore("in_system");
    }
    r.ignore("plans");
    r.ignore("shape");  // derived from `key`, which is authoritative
    r.finish();
    if (e.op.empty() || e.key.empty()) continue;
    try {
      e.shape = parse_shape_key(e.op, e.key, source, path + "/key");
    } catch (const ConfigError& err) {
      for (const auto& is : err.issues()) issues.add(is.path, is.message);
      continue;
    }
    if (flops && *flops < 0) issues.add(path + "/flops", "must be ≥ 0");
    // 1e24 FLOP is hours on any GPU for one call; beyond it run-time estimates overflow.
    if (flops && *flops > 1e24) issues.add(path + "/flops", "must be ≤ 1e24");
    e.flops = flops ? *flops : shape_flops(e.op, e.shape);
    auto [it, fresh] = seen.emplace(std::make_pair(e.op, e.key), i);
    if (!fresh) {
      issues.add(path, strprintf("duplicate of /shapes/%zu (same op and key)", it->second));
      continue;
    }
    const json& pl = (*shapes)[i].value("plans", json::array());
    for (const auto& v : pl)
      if (v.is_number_integer()) e.plans.push_back(v.get<int64_t>());
    out.shapes.push_back(std::move(e));
  }
  top.finish();
  issues.throw_if_any();
  return out;
}

}  // namespace trainsim
