// `trainsim validate` as a library: the tables of a folder picked and run, and the reports. The
// CLI and the Python module run the same code.
#include "cli/validate_report.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>
#include <sstream>

#include "system/presets.h"
#include "core/error.h"
#include "core/text.h"
#include "core/units.h"

namespace trainsim {
namespace {

std::string csv_field(const std::string& s) {
  std::string flat;
  for (char ch : s) flat += ch == '\n' ? std::string(" | ") : std::string(1, ch);
  if (flat.find_first_of(",\"") == std::string::npos) return flat;
  std::string out = "\"";
  for (char ch : flat) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

}  // namespace

std::vector<ValidationTable> load_validation_tables(const std::string& root, const std::vector<std::string>& wanted,
                                                    const std::vector<std::string>& system_swaps) {
  std::vector<std::string> dirs = find_validation_tables(root);
  if (!wanted.empty()) {
    std::vector<std::string> names, picked;
    for (const auto& d : dirs) names.push_back(validation_table_name(d));
    for (const auto& want : wanted) {
      auto it = std::find(names.begin(), names.end(), want);
      if (it == names.end()) {
        std::string msg = "no table '" + want + "'";
        std::string s = suggest(want, names);
        if (!s.empty()) msg += "; did you mean '" + s + "'?";
        throw ConfigError(root, "", msg + "; tables: " + join(names));
      }
      picked.push_back(dirs[static_cast<size_t>(it - names.begin())]);
    }
    dirs = picked;
  }

  // Input errors in the tables stop the run before any prediction.
  std::vector<ValidationTable> tables;
  for (const auto& d : dirs) tables.push_back(load_validation_table(d));
  // Side-by-side runs (datasheet vs measured system files) swap a table's system, not its cases.
  for (const auto& spec : system_swaps) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw UsageError("validate: --system: expected NAME=SYSTEM, got '" + spec + "'");
    const std::string from = spec.substr(0, eq), to = spec.substr(eq + 1);
    std::vector<std::string> named;
    bool used = false;
    for (auto& t : tables) {
      if (std::find(named.begin(), named.end(), t.system) == named.end()) named.push_back(t.system);
      if (t.system != from) continue;
      t.system = to;
      used = true;
    }
    if (!used) {
      std::string msg = "validate: --system: no table uses system '" + from + "'";
      if (std::string sug = suggest(from, named); !sug.empty()) msg += "; did you mean '" + sug + "'?";
      throw UsageError(msg + "; the tables use: " + join(named));
    }
  }
  return tables;
}

TableRun run_validation_table(ValidationTable t, Mode mode) {
  TableRun run;
  run.table = std::move(t);
  std::optional<SystemConfig> sys;
  try {
    ConfigText text = resolve_table_system(run.table);
    run.system_source = text.source;
    sys = load_system(text.text, text.source);
  } catch (const Error& e) {
    run.system_error = e.what();
  }
  for (const auto& c : run.table.cases) {
    if (!sys) {
      CaseResult failed;
      failed.name = c.name;
      failed.error = "system: " + run.system_error;
      run.results.push_back(failed);
      continue;
    }
    run.results.push_back(run_validation_case(run.table, c, *sys, run.system_source, mode));
  }
  run.summary = summarize(run.table, run.results);
  return run;
}

std::string validate_json(const std::vector<TableRun>& runs) {
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(); };
  nlohmann::ordered_json tables = nlohmann::ordered_json::array();
  for (const auto& run : runs) {
    const ValidationTable& t = run.table;
    nlohmann::ordered_json jt;
    jt["name"] = t.name;
    jt["dir"] = t.dir;
    jt["system"] = t.system;
    jt["system_source"] = run.system_source;
    if (!run.system_error.empty()) jt["system_error"] = run.system_error;
    nlohmann::ordered_json cases = nlohmann::ordered_json::array();
    for (size_t i = 0; i < t.cases.size(); ++i) {
      const ValidationCase& c = t.cases[i];
      const CaseResult& r = run.results[i];
      nlohmann::ordered_json jc;
      jc["case"] = c.name;
      jc["ok"] = r.ok();
      if (!r.ok()) jc["error"] = r.error;
      nlohmann::ordered_json metrics = nlohmann::ordered_json::object();
      for (size_t k = 0; k < t.metrics.size(); ++k) {
        nlohmann::ordered_json jm;
        jm["real"] = c.real[k];
        jm["predicted"] = r.ok() ? nlohmann::ordered_json(r.predicted[k]) : nlohmann::ordered_json();
        jm["error_pct"] = r.ok() ? nlohmann::ordered_json(signed_error_pct(r.predicted[k], c.real[k]))
                                 : nlohmann::ordered_json();
        jm["peer_error_pct"] = opt(c.peer_err_pct[k]);
        metrics[metric_name(t.metrics[k])] = jm;
      }
      jc["metrics"] = metrics;
      const bool verdict = r.ok() && r.fit.known;
      jc["peak_alloc_gib"] = r.ok() ? nlohmann::ordered_json(r.peak_alloc_bytes / kGiB) : nlohmann::ordered_json();
      jc["peak_reserved_gib"] = r.ok() ? nlohmann::ordered_json(r.peak_reserved_bytes / kGiB) : nlohmann::ordered_json();
      jc["fits"] = verdict ? nlohmann::ordered_json(r.fit.fits) : nlohmann::ordered_json();
      jc["fit_state"] = verdict ? nlohmann::ordered_json(fit_state_name(r.fit.state)) : nlohmann::ordered_json();
      jc["memory_headroom_gib"] = verdict ? nlohmann::ordered_json(r.fit.headroom_bytes / kGiB) : nlohmann::ordered_json();
      jc["memory_headroom_without_reserve_gib"] =
          verdict ? nlohmann::ordered_json(r.fit.floor_headroom_bytes / kGiB) : nlohmann::ordered_json();
      cases.push_back(jc);
    }
    jt["cases"] = cases;
    nlohmann::ordered_json summary = nlohmann::ordered_json::array();
    for (const auto& s : run.summary) {
      nlohmann::ordered_json js;
      js["metric"] = metric_name(s.metric);
      js["cases"] = s.cases;
      js["compared"] = s.compared;
      js["mean_abs_error_pct"] = s.compared ? nlohmann::ordered_json(s.mean_abs_err_pct) : nlohmann::ordered_json();
      js["max_abs_error_pct"] = s.compared ? nlohmann::ordered_json(s.max_abs_err_pct) : nlohmann::ordered_json();
      js["max_case"] = s.max_case;
      js["peer_compared"] = s.peer_compared;
      js["peer_mean_abs_error_pct"] =
          s.peer_compared ? nlohmann::ordered_json(s.peer_mean_abs_err_pct) : nlohmann::ordered_json();
      js["peer_max_abs_error_pct"] =
          s.peer_compared ? nlohmann::ordered_json(s.peer_max_abs_err_pct) : nlohmann::ordered_json();
      js["peer_published"] = s.peer_published;
      js["peer_published_mean_abs_error_pct"] =
          s.peer_published ? nlohmann::ordered_json(s.peer_published_mean_abs_err_pct) : nlohmann::ordered_json();
      js["peer_published_max_abs_error_pct"] =
          s.peer_published ? nlohmann::ordered_json(s.peer_published_max_abs_err_pct) : nlohmann::ordered_json();
      summary.push_back(js);
    }
    jt["summary"] = summary;
    const FitSummary f = summarize_fit(run.table, run.results);
    nlohmann::ordered_json jf;
    jf["whole_runs"] = f.whole_runs;  // false: per-layer timings, the verdicts are not misses
    jf["predicted"] = f.predicted;
    jf["fits"] = f.fits;
    jf["not_fit"] = static_cast<int64_t>(f.not_fit.size());
    jf["not_fit_cases"] = f.not_fit;
    jf["tight"] = static_cast<int64_t>(f.tight.size());  // counted in fits
    jf["tight_cases"] = f.tight;
    jf["least_headroom_gib"] = f.predicted ? nlohmann::ordered_json(f.least_headroom_gib) : nlohmann::ordered_json();
    jf["least_case"] = f.least_case;
    jt["fit"] = jf;
    tables.push_back(jt);
  }
  nlohmann::ordered_json out;
  out["tables"] = tables;
  return out.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string validate_csv(const std::vector<TableRun>& runs) {
  std::ostringstream out;
  out << "table,case,metric,real,predicted,error_pct,peer_error_pct,fits,fit_state,memory_headroom_gib,"
         "memory_headroom_without_reserve_gib,status,message\n";
  for (const auto& run : runs) {
    const ValidationTable& t = run.table;
    for (size_t i = 0; i < t.cases.size(); ++i) {
      const ValidationCase& c = t.cases[i];
      const CaseResult& r = run.results[i];
      for (size_t k = 0; k < t.metrics.size(); ++k) {
        out << csv_field(t.name) << ',' << csv_field(c.name) << ',' << metric_name(t.metrics[k]) << ','
            << format_number(c.real[k]) << ',';
        if (r.ok())
          out << format_number(r.predicted[k]) << ','
              << strprintf("%.4f", signed_error_pct(r.predicted[k], c.real[k]));
        else
          out << ',';
        const bool verdict = r.ok() && r.fit.known;
        out << ',' << (c.peer_err_pct[k] ? strprintf("%.4f", *c.peer_err_pct[k]) : "") << ','
            << (verdict ? (r.fit.fits ? "true" : "false") : "") << ','
            << (verdict ? fit_state_name(r.fit.state) : "") << ','
            << (verdict ? strprintf("%.4f", r.fit.headroom_bytes / kGiB) : "") << ','
            << (verdict ? strprintf("%.4f", r.fit.floor_headroom_bytes / kGiB) : "") << ','
            << (r.ok() ? "ok" : "failed") << ',' << csv_field(r.error) << '\n';
      }
    }
  }
  return out.str();
}

}  // namespace trainsim
