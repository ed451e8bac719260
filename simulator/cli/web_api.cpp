// Web app requests: inputs → predict() → the same views as the CLI (JSON, HTML sections).
#include "cli/web_api.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/text.h"
#include "estimate/throughput.h"
#include "search/search.h"
#include "views/html_report.h"
#include "views/registry.h"
#include "views/predict.h"

namespace trainsim {

namespace {

// Bad input in a request, with the input or key it concerns.
struct FieldError : Error {
  FieldError(std::string f, const std::string& message) : Error(message), field(std::move(f)) {}
  std::string field;
};

// A preset by name; paths are refused so that a request cannot make the server read files.
ConfigText preset(const std::string& kind, const std::string& name) {
  const std::vector<std::string> names = preset_names(kind);
  if (std::find(names.begin(), names.end(), name) != names.end()) return resolve_config(kind, name);
  std::string msg = kind + ": unknown preset '" + name + "'";
  if (std::string s = suggest(name, names); !s.empty()) msg += "; did you mean '" + s + "'?";
  throw FieldError(kind, msg + " (presets: " + join(names) + "; or send the document in a POST)");
}

// Inputs of one prediction, from query parameters or a JSON body.
struct Inputs {
  PlanRequest request;
  ConfigText system{"", ""};
  MfuConvention mfu = MfuConvention::Megatron;
  Mode mode = Mode::Default;
  bool own_model = false;  // a Megatron command line describes the model
  ViewOptions view;        // level (breakdown): what /api/view/<name> may be asked for
};

Mode parse_compat(const std::string& v) {
  if (v.empty()) return Mode::Default;
  if (auto m = parse_mode(v); m && *m == Mode::SimuMax12) return *m;
  throw FieldError("compat", "compat: unknown mode '" + v + "'; valid values: simumax-1.2");
}

// Named as the CLI's --set, so that messages and the plan's source name are the CLI's.
Override set_override(const std::string& key, const std::string& value) {
  return {key, value, "--set " + key + "=" + value};
}

Inputs from_params(const std::vector<std::pair<std::string, std::string>>& params) {
  Inputs in;
  std::string system = kDefaultSystem;
  for (const auto& [k, v] : params) {
    if (k == "model") {
      in.request.model = preset("model", v);
    } else if (k == "strategy") {
      in.request.strategy = preset("strategy", v);
    } else if (k == "system") {
      system = v;
    } else if (k == "hf_config") {
      if (!v.empty()) in.request.hf_config = ConfigText{v, "hf_config"};
    } else if (k == "megatron_args") {
      if (!v.empty()) in.request.megatron = ConfigText{v, "megatron_args"};
    } else if (k == "set") {
      const size_t eq = v.find('=');
      if (eq == std::string::npos) throw FieldError("set", "set: expected key=value, got '" + v + "'");
      in.request.overrides.push_back(set_override(v.substr(0, eq), v.substr(eq + 1)));
    } else if (k == "mfu") {
      in.mfu = parse_mfu_convention(v, "mfu");
    } else if (k == "compat") {
      in.mode = parse_compat(v);
    } else if (k == "level") {
      in.view.level = parse_breakdown_level(v, "level");
    } else {
      throw FieldError(k, "unknown parameter '" + k + "'; valid: model, strategy, system, hf_config, megatron_args, "
                          "set, mfu, compat, level");
    }
  }
  in.system = preset("system", system);
  in.own_model = in.request.megatron.has_value() && !in.request.model;
  return in;
}

// A body field that is a preset name (string) or a document (object).
ConfigText name_or_document(const std::string& kind, const nlohmann::json& v) {
  if (v.is_string()) return preset(kind, v.get<std::string>());
  if (v.is_object()) return {v.dump(), kind + " (request)"};
  throw FieldError(kind, kind + ": expected a preset name or a JSON document");
}

nlohmann::json body_json(const std::string& body) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body);
  } catch (const nlohmann::json::exception& e) {
    throw FieldError("", std::string("request body: not JSON: ") + e.what());
  }
  if (!j.is_object()) throw FieldError("", "request body: expected a JSON object");
  return j;
}

Inputs from_body(const nlohmann::json& j) {
  Inputs in;
  in.system = preset("system", kDefaultSystem);
  for (const auto& [k, v] : j.items()) {
    if (k == "model") {
      if (v.is_null() || (v.is_string() && v.get<std::string>().empty())) continue;  // the command line's
      in.request.model = name_or_document("model", v);
    } else if (k == "strategy") {
      in.request.strategy = name_or_document("strategy", v);
    } else if (k == "system") {
      in.system = name_or_document("system", v);
    } else if (k == "hf_config") {
      if (!v.is_object()) throw FieldError(k, "hf_config: expected the config.json document");
      in.request.hf_config = ConfigText{v.dump(), "hf_config (request)"};
    } else if (k == "megatron_args") {
      if (!v.is_string()) throw FieldError(k, "megatron_args: expected the command line as a string");
      in.request.megatron = ConfigText{v.get<std::string>(), "megatron_args (request)"};
    } else if (k == "set") {
      if (!v.is_object()) throw FieldError(k, "set: expected an object of key: value");
      for (const auto& [sk, sv] : v.items())
        in.request.overrides.push_back(set_override(sk, sv.is_string() ? sv.get<std::string>() : sv.dump()));
    } else if (k == "mfu" && v.is_string()) {
      in.mfu = parse_mfu_convention(v.get<std::string>(), "mfu");
    } else if (k == "compat" && v.is_string()) {
      in.mode = parse_compat(v.get<std::string>());
    } else if (k == "level" && v.is_string()) {
      in.view.level = parse_breakdown_level(v.get<std::string>(), "level");
    } else {
      throw FieldError(k, "request body: unknown or mistyped key '" + k +
                              "'; valid: model, strategy, system, hf_config, megatron_args, set, mfu, compat, level");
    }
  }
  in.own_model = in.request.megatron.has_value() && !in.request.model;
  return in;
}

Prediction run(const Inputs& in) {
  return predict(in.request, in.own_model ? "" : kDefaultModel, kDefaultStrategy, in.system, in.mfu, in.mode);
}

// The plan a request describes, before its switches with no effect are turned off: what the
// page shows in its fields (a pasted line's values, the edits on top).
PlanConfigs plan_of(const Inputs& in) {
  PlanRequest r = in.request;
  r.mode = in.mode;
  r.normalize = false;
  return build_plan(r, in.own_model ? "" : kDefaultModel, kDefaultStrategy);
}

// POST /api/resolve: the model and strategy documents of the request, and where they came from.
ApiResponse resolve_response(const Inputs& in) {
  const PlanConfigs pc = plan_of(in);
  nlohmann::ordered_json j;
  j["model"] = nlohmann::ordered_json::parse(model_to_json_text(pc.model));
  j["strategy"] = nlohmann::ordered_json::parse(strategy_to_json_text(pc.strategy));
  j["model_source"] = pc.model_source;
  j["strategy_source"] = pc.strategy_source;
  j["global_batch_size"] = pc.strategy.global_batch_size();
  return {200, "application/json", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"};
}

// The keys a request overrides (best effort: the request may be what is malformed).
std::vector<std::string> set_keys(const ApiRequest& req) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : req.params)
    if (k == "set") keys.push_back(v.substr(0, v.find('=')));
  const nlohmann::json j = nlohmann::json::parse(req.body, nullptr, false);
  if (j.is_object() && j.contains("set") && j["set"].is_object())
    for (const auto& [k, v] : j["set"].items()) keys.push_back(k);
  return keys;
}

// The key an error concerns: an overridden key among its issues' JSON paths (the edit that broke
// the plan, also on a pasted document), else the pasted document's box, else its first issue's
// key, else an overridden key its message names.
std::string field_of(const Error& e, const std::vector<std::string>& keys) {
  if (const auto* f = dynamic_cast<const FieldError*>(&e)) return f->field;
  const std::string msg = e.what();
  std::vector<std::string> paths;
  std::string box;
  if (const auto* c = dynamic_cast<const ConfigError*>(&e))
    for (const Issue& i : c->issues()) {
      // Otherwise a pasted document's problem belongs to its box, whatever key it names.
      for (const char* b : {"hf_config", "megatron_args"})
        if (box.empty() && i.source.rfind(b, 0) == 0) box = b;
      if (i.path.size() > 1 && i.path[0] == '/')
        paths.push_back(i.path.substr(1, i.path.find('/', 1) == std::string::npos ? std::string::npos : i.path.find('/', 1) - 1));
    }
  for (const auto& p : paths)
    if (std::find(keys.begin(), keys.end(), p) != keys.end()) return p;
  if (!box.empty()) return box;
  if (!paths.empty()) return paths.front();
  for (const auto& k : keys)
    if (!k.empty() && msg.find(k) != std::string::npos) return k;
  return "";
}

ApiResponse json_response(int status, const nlohmann::json& j) {
  return {status, "application/json", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"};
}

ApiResponse search_section(const std::vector<std::pair<std::string, std::string>>& params) {
  std::string model = kDefaultModel, system = kDefaultSystem;
  int64_t gpus = 16, gbs = 64, top = kMaxKeep;  // every feasible candidate in the scatter
  auto integer = [](const std::string& k, const std::string& v) {
    int64_t n = -1;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size() || n < 0)
      throw FieldError(k, k + ": expected a non-negative integer, got '" + v + "'");
    return n;
  };
  for (const auto& [k, v] : params) {
    if (k == "model") model = v;
    else if (k == "system") system = v;
    else if (k == "gpus") gpus = integer(k, v);
    else if (k == "gbs") gbs = integer(k, v);
    else if (k == "top") top = integer(k, v);
    else throw FieldError(k, "unknown parameter '" + k + "'; valid: model, system, gpus, gbs, top");
  }
  const ConfigText mt = preset("model", model), st = preset("system", system);
  SearchOptions o;
  o.world_size = gpus;
  o.global_batch = gbs;
  o.keep = top;
  o.threads = 1;  // requests already run in parallel
  o.base.seq_len = 4096;
  const SearchResult r = search(load_model(mt.text, mt.source), load_system(st.text, st.source), {}, o);
  return {200, "text/html; charset=utf-8",
          search_report_section(r, strprintf("%s on %lld GPUs", model.c_str(), static_cast<long long>(gpus)))};
}

// POST /api/search: the request's own plan searched — its model, its system, its strategy's other
// switches, seq_len, world size and global batch (`gpus`, `gbs` replace the last two; `top`).
ApiResponse search_of_plan(nlohmann::json j) {
  int64_t gpus = 0, gbs = 0, top = kMaxKeep;
  for (const char* k : {"gpus", "gbs", "top"}) {
    if (!j.contains(k)) continue;
    const nlohmann::json v = j[k];
    j.erase(k);
    if (v.is_null() || (v.is_string() && v.get<std::string>().empty())) continue;
    int64_t n = -1;
    if (v.is_number_integer()) {
      n = v.get<int64_t>();
    } else if (v.is_string()) {
      const std::string t = v.get<std::string>();
      const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
      if (ec != std::errc() || end != t.data() + t.size()) n = -1;
    }
    if (n < (std::string(k) == "top" ? 0 : 1))
      throw FieldError(k, std::string(k) + ": expected a positive integer, got " + v.dump());
    (std::string(k) == "gpus" ? gpus : std::string(k) == "gbs" ? gbs : top) = n;
  }
  const Inputs in = from_body(j);
  const PlanConfigs pc = plan_of(in);
  const ConfigText sys = apply_system_overrides(in.system, in.request.overrides);
  SearchOptions o;
  o.base = pc.strategy;
  if (o.base.seq_len <= 0) o.base.seq_len = 4096;
  o.world_size = gpus ? gpus : pc.strategy.world_size;
  o.global_batch = gbs ? gbs : pc.strategy.global_batch_size();
  o.keep = top;
  o.threads = 1;  // requests already run in parallel
  o.mode = in.mode;
  o.mfu = in.mfu;
  const SystemConfig system = load_system(sys.text, sys.source);
  const SearchResult r = search(pc.model, system, {}, o);
  const std::string name = pc.model.model_name.empty() ? pc.model_source : pc.model.model_name;
  const std::string scope =
      strprintf("<p id=\"search-plan\">searched: %s on %lld GPUs (%s), global batch %lld, seq %lld</p>\n",
                html_escape(name).c_str(), static_cast<long long>(o.world_size), html_escape(system.sys_name).c_str(),
                static_cast<long long>(o.global_batch), static_cast<long long>(o.base.seq_len));
  return {200, "text/html; charset=utf-8",
          scope + search_report_section(r, strprintf("%s on %lld GPUs", name.c_str(),
                                                     static_cast<long long>(o.world_size)))};
}

}  // namespace

ApiResponse handle_api(const ApiRequest& req) {
  try {
    if (req.method == "GET" && req.path == "/api/presets")
      return json_response(200, {{"model", preset_names("model")},
                                 {"strategy", preset_names("strategy")},
                                 {"system", preset_names("system")}});
    if (req.method == "GET" && req.path == "/api/preset") {
      std::string kind, name;
      for (const auto& [k, v] : req.params) (k == "kind" ? kind : name) = v;
      if (kind != "model" && kind != "strategy" && kind != "system")
        throw FieldError("kind", "kind: expected model, strategy or system, got '" + kind + "'");
      return {200, "application/json", preset(kind, name).text};
    }
    // A view of one prediction (views/registry.h): /api/view/<name>, and the app's two names for
    // the JSON document and the report section.
    constexpr std::string_view kViewPrefix = "/api/view/";
    const bool any_view = req.path.rfind(kViewPrefix, 0) == 0;
    if (req.path == "/api/perf" || req.path == "/api/report" || any_view) {
      if (req.method != "GET" && req.method != "POST")
        return json_response(405, {{"error", req.method + " " + req.path + ": use GET or POST"}, {"field", ""}});
      const View& v = any_view ? view(std::string_view(req.path).substr(kViewPrefix.size()))
                               : view(req.path == "/api/perf" ? "json" : "report");
      const Inputs in = req.method == "GET" ? from_params(req.params) : from_body(body_json(req.body));
      const Prediction p = run(in);
      return {200, std::string(v.media_type), v.render(p.in, p.estimate, in.view)};
    }
    if (req.path == "/api/resolve" && req.method == "POST") return resolve_response(from_body(body_json(req.body)));
    if (req.method == "GET" && req.path == "/api/search") return search_section(req.params);
    if (req.method == "POST" && req.path == "/api/search") return search_of_plan(body_json(req.body));
    return json_response(404, {{"error", "no such endpoint: " + req.method + " " + req.path}, {"field", ""}});
  } catch (const Error& e) {
    return json_response(400, {{"error", e.what()}, {"field", field_of(e, set_keys(req))}});
  } catch (const std::exception& e) {
    // A bug, not bad input: answer it and keep serving.
    return json_response(500, {{"error", std::string("internal error: ") + e.what()}, {"field", ""}});
  }
}

}  // namespace trainsim
