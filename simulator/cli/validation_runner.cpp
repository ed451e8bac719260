// Accuracy suite: table loading, prediction of the compared metrics, error summary.
#include "cli/validation_runner.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <filesystem>
#include <map>
#include <set>

#include "inputs/json_reader.h"
#include "inputs/plan_request.h"
#include "plan/validate.h"
#include "core/enum_table.h"
#include "core/error.h"
#include "core/text.h"
#include "core/units.h"
#include "estimate/estimate.h"

namespace trainsim {
namespace {

namespace fs = std::filesystem;

constexpr EnumTable<ValidationMetric, 6> kMetrics("metric", {{{ValidationMetric::IterationMs, "iteration_ms"},
                                                               {ValidationMetric::LayerFwdMs, "layer_fwd_ms"},
                                                               {ValidationMetric::LayerBwdMs, "layer_bwd_ms"},
                                                               {ValidationMetric::LayerMs, "layer_ms"},
                                                               {ValidationMetric::AllocGib, "alloc_gib"},
                                                               {ValidationMetric::ReservedGib, "reserved_gib"}}});
constexpr const char* kTflopsPeer = "peer_tflops_err_pct";

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

std::optional<ValidationMetric> metric_from_name(const std::string& name) { return kMetrics.find(name); }

// Splits one CSV line; double-quoted fields may hold commas and "" for a quote.
// Returns false on an unterminated quote or text after a closing quote.
bool split_csv_line(const std::string& line, std::vector<std::string>& out) {
  out.clear();
  std::string field;
  size_t i = 0;
  while (true) {
    field.clear();
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i < line.size() && line[i] == '"') {
      ++i;
      bool closed = false;
      while (i < line.size()) {
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          closed = true;
          break;
        }
        field += line[i++];
      }
      if (!closed) return false;
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
      if (i < line.size() && line[i] != ',') return false;
    } else {
      while (i < line.size() && line[i] != ',') field += line[i++];
      field = trim(field);
    }
    out.push_back(field);
    if (i >= line.size()) return true;
    ++i;  // the comma
  }
}

bool valid_case_name(const std::string& name) {
  if (name.empty() || name[0] == '.') return false;
  for (char ch : name) {
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-';
    if (!ok) return false;
  }
  return true;
}

// What a header column feeds.
struct Column {
  enum Kind { Case, Real, Peer, PeerTflops, Info } kind = Info;
  size_t metric = 0;  // index into ValidationTable::metrics (Real, Peer, PeerTflops)
  std::string name;
};

std::vector<std::string> real_column_names() {
  std::vector<std::string> out;
  for (const auto& row : kMetrics.rows()) out.push_back("real_" + std::string(row.second));
  return out;
}

std::vector<std::string> peer_column_names() {
  std::vector<std::string> out;
  for (const auto& row : kMetrics.rows()) out.push_back("peer_err_pct_" + std::string(row.second));
  out.emplace_back(kTflopsPeer);
  return out;
}

std::string unknown_column(const std::string& name, const std::vector<std::string>& valid) {
  std::string msg = "unknown column '" + name + "'; valid names: " + join(valid);
  std::string s = suggest(name, valid);
  if (!s.empty()) msg += "; did you mean '" + s + "'?";
  return msg;
}

double stage_value(const Estimate& e, ValidationMetric m) {
  if (e.stage_times.empty()) throw Error("the estimate has no stage times");
  const StageTime& st = e.stage_times.front();
  switch (m) {
    case ValidationMetric::LayerFwdMs: return st.fwd_per_mb_s;
    case ValidationMetric::LayerBwdMs: return st.bwd_per_mb_s;
    case ValidationMetric::LayerMs: return st.fwd_per_mb_s + st.bwd_per_mb_s;
    case ValidationMetric::IterationMs:
    case ValidationMetric::AllocGib:
    case ValidationMetric::ReservedGib: break;
  }
  return e.iteration_time_s;
}

}  // namespace

const char* metric_name(ValidationMetric m) { return kMetrics.c_str(m); }

bool is_memory_metric(ValidationMetric m) {
  return m == ValidationMetric::AllocGib || m == ValidationMetric::ReservedGib;
}

std::vector<std::string> metric_names() { return kMetrics.names(); }

std::string validation_table_name(const std::string& dir) {
  std::error_code ec;
  fs::path p = fs::absolute(fs::path(dir), ec);
  p = (ec ? fs::path(dir) : p).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // trailing separator
  return p.filename().string();
}

std::string ValidationTable::case_dir(const ValidationCase& c) const {
  return (fs::path(dir) / "cases" / c.name).string();
}

namespace {

// The error of line `line` of the table's CSV.
ConfigError csv_error(const std::string& source, int64_t line, const std::string& msg) {
  return ConfigError(source, "line " + std::to_string(line), msg);
}

// The header: the case column, one real_<metric> column per compared metric (added to t.metrics),
// the peer's error columns bound to their metric, any other column informational.
std::vector<Column> read_header(const std::vector<std::string>& fields, int64_t line_no, ValidationTable& t,
                                const std::string& source) {
  auto fail = [&](int64_t line, const std::string& msg) { return csv_error(source, line, msg); };
  std::vector<Column> cols;
  if (fields[0] != "case")
    throw fail(line_no, "the first column must be 'case', got '" + fields[0] + "'");
  std::set<std::string> seen;
  bool tflops_peer = false;
  for (const auto& name : fields) {
    if (name.empty()) throw fail(line_no, "empty column name");
    if (!seen.insert(name).second) throw fail(line_no, "duplicate column '" + name + "'");
    Column c;
    c.name = name;
    if (name == "case") {
      c.kind = Column::Case;
    } else if (starts_with(name, "real_")) {
      auto m = metric_from_name(name.substr(5));
      if (!m) throw fail(line_no, unknown_column(name, real_column_names()));
      c.kind = Column::Real;
      c.metric = t.metrics.size();
      t.metrics.push_back(*m);
    } else if (starts_with(name, "peer_")) {
      if (name == kTflopsPeer) {
        c.kind = Column::PeerTflops;
        tflops_peer = true;
      } else if (starts_with(name, "peer_err_pct_") && metric_from_name(name.substr(13))) {
        c.kind = Column::Peer;
      } else {
        throw fail(line_no, unknown_column(name, peer_column_names()));
      }
    }
    cols.push_back(c);
  }
  if (t.metrics.empty())
    throw fail(line_no, "no compared metric; expected at least one of the columns " +
                            join(real_column_names()));
  // Bind peer columns to their metric.
  for (auto& c : cols) {
    if (c.kind != Column::Peer && c.kind != Column::PeerTflops) continue;
    std::string metric = c.kind == Column::Peer ? c.name.substr(13) : "iteration_ms";
    auto it = std::find_if(t.metrics.begin(), t.metrics.end(),
                           [&](ValidationMetric m) { return metric == metric_name(m); });
    if (it == t.metrics.end())
      throw fail(line_no, "column '" + c.name + "' needs the column 'real_" + metric + "'");
    c.metric = static_cast<size_t>(it - t.metrics.begin());
    if (c.kind == Column::Peer && metric == "iteration_ms" && tflops_peer)
      throw fail(line_no, "give the peer's error once: 'peer_err_pct_iteration_ms' or '" +
                              std::string(kTflopsPeer) + "'");
  }
  return cols;
}

// One case row under the header's columns.
ValidationCase read_case(const std::vector<std::string>& fields, const std::vector<Column>& cols, int64_t line_no,
                         const ValidationTable& t, std::map<std::string, int64_t>& case_lines,
                         const std::string& source) {
  auto fail = [&](int64_t line, const std::string& msg) { return csv_error(source, line, msg); };
  if (fields.size() != cols.size())
    throw fail(line_no, strprintf("expected %zu fields (as in the header), got %zu", cols.size(),
                                  fields.size()));
  ValidationCase vc;
  vc.line = line_no;
  vc.real.assign(t.metrics.size(), 0.0);
  vc.peer_err_pct.assign(t.metrics.size(), std::nullopt);
  for (size_t i = 0; i < cols.size(); ++i) {
    const Column& c = cols[i];
    const std::string& v = fields[i];
    switch (c.kind) {
      case Column::Case: {
        if (!valid_case_name(v))
          throw fail(line_no, "invalid case name '" + v +
                                  "'; use letters, digits, '.', '_' and '-' (not first '.')");
        auto [it, inserted] = case_lines.emplace(v, line_no);
        if (!inserted)
          throw fail(line_no, "duplicate case '" + v + "' (first on line " +
                                  std::to_string(it->second) + ")");
        vc.name = v;
        break;
      }
      case Column::Real: {
        double x = 0;
        if (!parse_double(v, x) || x <= 0)
          throw fail(line_no, "column '" + c.name + "': expected a positive number, got '" + v + "'");
        vc.real[c.metric] = x;
        break;
      }
      case Column::Peer:
      case Column::PeerTflops: {
        if (v.empty()) break;  // not published
        double x = 0;
        if (!parse_double(v, x) || (c.kind == Column::PeerTflops && x <= -100))
          throw fail(line_no, "column '" + c.name + "': expected a number" +
                                  (c.kind == Column::PeerTflops ? std::string(" above -100") : "") +
                                  " or nothing, got '" + v + "'");
        vc.peer_err_pct[c.metric] = c.kind == Column::PeerTflops ? time_error_from_tflops_error(x) : x;
        break;
      }
      case Column::Info:
        vc.info.emplace_back(c.name, v);
        break;
    }
  }
  return vc;
}

}  // namespace

ValidationTable parse_validation_csv(const std::string& text, const std::string& source) {
  ValidationTable t;
  t.csv_path = source;
  std::vector<Column> cols;
  std::map<std::string, int64_t> case_lines;
  std::vector<std::string> fields;
  size_t pos = 0;
  int64_t line_no = 0;
  bool have_header = false;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (trim(line).empty()) continue;
    if (!split_csv_line(line, fields)) throw csv_error(source, line_no, "unterminated or misplaced double quote");

    if (!have_header) {
      have_header = true;
      cols = read_header(fields, line_no, t, source);
      continue;
    }

    t.cases.push_back(read_case(fields, cols, line_no, t, case_lines, source));
  }
  if (!have_header) throw ConfigError(source, "", "is empty; expected a header line starting with 'case'");
  if (t.cases.empty()) throw ConfigError(source, "", "has a header but no case rows");
  return t;
}

ValidationTable load_validation_table(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw ConfigError(dir, "", "not a directory");
  const fs::path root(dir);
  const std::string csv = (root / "cases.csv").string();
  ValidationTable t = parse_validation_csv(read_file(csv), csv);
  t.dir = dir;
  t.name = validation_table_name(dir);

  const std::string sys_path = (root / "system.txt").string();
  const std::string sys_text = read_file(sys_path);
  int64_t line_no = 0, first = 0;
  size_t pos = 0;
  while (pos < sys_text.size()) {
    size_t nl = sys_text.find('\n', pos);
    std::string line = sys_text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? sys_text.size() : nl + 1;
    ++line_no;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    line = trim(line);
    if (line.empty()) continue;
    if (first)
      throw ConfigError(sys_path, "line " + std::to_string(line_no),
                        "expected a single system name; the first is on line " + std::to_string(first));
    first = line_no;
    t.system = line;
  }
  if (!first) throw ConfigError(sys_path, "", "expected one line naming a system preset or file");

  IssueList issues(csv);
  std::set<std::string> names;
  for (const auto& c : t.cases) {
    names.insert(c.name);
    // A Megatron-LM command line stands for both files.
    if (fs::is_regular_file(fs::path(t.case_dir(c)) / "megatron_args.txt", ec)) continue;
    for (const char* f : {"model.json", "strategy.json"}) {
      fs::path p = fs::path(t.case_dir(c)) / f;
      if (!fs::is_regular_file(p, ec))
        issues.add("line " + std::to_string(c.line), "case '" + c.name + "': missing " + p.string());
    }
  }
  const fs::path cases_dir = root / "cases";
  if (fs::is_directory(cases_dir, ec)) {
    std::vector<std::string> orphans;
    for (const auto& entry : fs::directory_iterator(cases_dir, ec))
      if (entry.is_directory(ec) && !names.count(entry.path().filename().string()))
        orphans.push_back(entry.path().string());
    std::sort(orphans.begin(), orphans.end());
    for (const auto& o : orphans) issues.add("", "folder " + o + " has no row in cases.csv");
  }
  issues.throw_if_any();
  return t;
}

std::vector<std::string> find_validation_tables(const std::string& root) {
  std::error_code ec;
  if (fs::is_regular_file(fs::path(root) / "cases.csv", ec)) return {root};
  if (!fs::is_directory(root, ec)) throw ConfigError(root, "", "not a directory");
  std::vector<std::string> out;
  std::error_code list_ec;
  for (const auto& entry : fs::directory_iterator(root, list_ec))
    if (entry.is_directory(ec) && fs::is_regular_file(entry.path() / "cases.csv", ec))
      out.push_back(entry.path().string());
  if (list_ec) throw ConfigError(root, "", "cannot list the directory: " + list_ec.message());
  std::sort(out.begin(), out.end());
  if (out.empty()) throw ConfigError(root, "", "holds no table folder (a folder with a cases.csv)");
  return out;
}

ConfigText resolve_table_system(const ValidationTable& t) {
  std::error_code ec;
  fs::path local = fs::path(t.dir) / t.system;
  if (!t.dir.empty() && fs::is_regular_file(local, ec)) return {read_file(local.string()), local.string()};
  return resolve_config("system", t.system);
}

double signed_error_pct(double predicted, double real) { return (predicted / real - 1.0) * 100.0; }

double time_error_from_tflops_error(double tflops_err_pct) {
  return (1.0 / (1.0 + tflops_err_pct / 100.0) - 1.0) * 100.0;
}

std::vector<double> predict_metrics(const std::vector<ValidationMetric>& metrics, const ModelConfig& m,
                                    const StrategyConfig& s, const SystemConfig& sys, Mode mode) {
  const bool per_layer = std::any_of(metrics.begin(), metrics.end(), [](ValidationMetric x) {
    return x != ValidationMetric::IterationMs && !is_memory_metric(x);
  });
  std::optional<Estimate> half;
  int64_t half_layers = 0;
  if (per_layer) {
    if (s.pp_size != 1)
      throw Error(strprintf("per-layer metrics need pp_size 1 (every layer on one stage), got %lld",
                            static_cast<long long>(s.pp_size)));
    if (m.layer_num < 2 || m.layer_num % 2 != 0)
      throw Error(strprintf("per-layer metrics need an even layer_num (the plan is also estimated "
                            "with half the layers), got %lld", static_cast<long long>(m.layer_num)));
    half_layers = m.layer_num / 2;
    ModelConfig mh = m;
    mh.layer_num = half_layers;
    StrategyConfig sh = s;
    sh.recompute_layer_num = std::min(s.recompute_layer_num, half_layers);
    half = estimate(resolve_plan(mh, sh, sys, mode));
  }
  const Estimate full = estimate(resolve_plan(m, s, sys, mode));
  std::vector<double> out;
  for (auto metric : metrics) {
    double v = 0;
    if (metric == ValidationMetric::AllocGib) {
      v = full.peak_alloc_bytes() / kGiB;
    } else if (metric == ValidationMetric::ReservedGib) {
      v = full.peak_reserved_bytes() / kGiB;
    } else {
      v = 1e3 * (metric == ValidationMetric::IterationMs
                     ? full.iteration_time_s
                     : (stage_value(full, metric) - stage_value(*half, metric)) / static_cast<double>(half_layers));
    }
    if (!std::isfinite(v)) throw Error(std::string("predicted a non-finite ") + metric_name(metric));
    out.push_back(v);
  }
  return out;
}

ValidationPlan load_validation_plan(const ValidationTable& t, const ValidationCase& c, Mode mode) {
  const fs::path dir(t.case_dir(c));
  ValidationPlan p;
  std::error_code ec;
  const fs::path args = dir / "megatron_args.txt";
  if (fs::is_regular_file(args, ec)) {
    PlanRequest req;
    req.mode = mode;
    req.megatron = ConfigText{read_file(args.string()), args.string()};
    const fs::path hf = dir / "config.json";
    if (fs::is_regular_file(hf, ec)) req.hf_config = ConfigText{read_file(hf.string()), hf.string()};
    PlanConfigs pc = build_plan(req, "", "");
    p.model = std::move(pc.model);
    p.strategy = std::move(pc.strategy);
    p.model_source = pc.model_source.empty() ? args.string() : pc.model_source;
    p.strategy_source = pc.strategy_source.empty() ? args.string() : pc.strategy_source;
    return p;
  }
  p.model_source = (dir / "model.json").string();
  p.strategy_source = (dir / "strategy.json").string();
  p.model = load_model(read_file(p.model_source), p.model_source);
  p.strategy = load_strategy(read_file(p.strategy_source), p.strategy_source);
  return p;
}

CaseResult run_validation_case(const ValidationTable& t, const ValidationCase& c, const SystemConfig& sys,
                               const std::string& system_source, Mode mode) {
  CaseResult r;
  r.name = c.name;
  try {
    ValidationPlan p = load_validation_plan(t, c, mode);
    ModelConfig& m = p.model;
    StrategyConfig& s = p.strategy;
    const std::string& mpath = p.model_source;
    const std::string& spath = p.strategy_source;
    const Plan plan = resolve_plan(m, s, sys, mode, PlanSources{mpath, spath, system_source});
    r.predicted = predict_metrics(t.metrics, m, s, sys, mode);
    const Estimate e = estimate(plan, nullptr, /*events=*/false);
    r.fit = fit_verdict(e, fit_rule(sys, mode));
    r.peak_reserved_bytes = e.peak_reserved_bytes();
    r.peak_alloc_bytes = e.peak_alloc_bytes();
    for (const double v : r.predicted)
      if (!std::isfinite(v))
        throw Error(strprintf("the prediction is not finite (%g): a number in the inputs is out of any realistic "
                              "range; check model %s, strategy %s and system %s",
                              v, mpath.c_str(), spath.c_str(), system_source.c_str()));
  } catch (const Error& e) {
    r.error = e.what();
  } catch (const std::exception& e) {
    r.error = std::string("internal error: ") + e.what();
  }
  if (r.error.empty() && r.predicted.size() != t.metrics.size()) r.error = "internal error: metric count";
  return r;
}

FitSummary summarize_fit(const std::vector<CaseResult>& results) {
  FitSummary f;
  for (const auto& r : results) {
    if (!r.ok() || !r.fit.known) continue;
    const double h = r.fit.headroom_bytes / kGiB;
    if (f.predicted == 0 || h < f.least_headroom_gib) {
      f.least_headroom_gib = h;
      f.least_case = r.name;
    }
    ++f.predicted;
    f.fits += r.fit.fits ? 1 : 0;
    if (!r.fit.fits) f.not_fit.push_back(r.name);
    if (r.fit.tight()) f.tight.push_back(r.name);
  }
  return f;
}

bool measures_whole_runs(const ValidationTable& t) {
  return std::none_of(t.metrics.begin(), t.metrics.end(), [](ValidationMetric m) {
    return m == ValidationMetric::LayerFwdMs || m == ValidationMetric::LayerBwdMs || m == ValidationMetric::LayerMs;
  });
}

FitSummary summarize_fit(const ValidationTable& t, const std::vector<CaseResult>& results) {
  FitSummary f = summarize_fit(results);
  f.whole_runs = measures_whole_runs(t);
  return f;
}

std::vector<MetricSummary> summarize(const ValidationTable& t, const std::vector<CaseResult>& results) {
  TRAINSIM_ASSERT(results.size() == t.cases.size(), "one result per case");
  std::vector<MetricSummary> out;
  for (size_t k = 0; k < t.metrics.size(); ++k) {
    MetricSummary s;
    s.metric = t.metrics[k];
    s.cases = static_cast<int64_t>(t.cases.size());
    double sum = 0, peer_sum = 0, published_sum = 0;
    for (size_t i = 0; i < t.cases.size(); ++i) {
      const CaseResult& r = results[i];
      if (const auto& peer = t.cases[i].peer_err_pct[k]) {
        ++s.peer_published;
        published_sum += std::fabs(*peer);
        s.peer_published_max_abs_err_pct = std::max(s.peer_published_max_abs_err_pct, std::fabs(*peer));
      }
      if (!r.ok()) continue;
      double err = std::fabs(signed_error_pct(r.predicted[k], t.cases[i].real[k]));
      ++s.compared;
      sum += err;
      if (s.compared == 1 || err > s.max_abs_err_pct) {
        s.max_abs_err_pct = err;
        s.max_case = t.cases[i].name;
      }
      if (const auto& peer = t.cases[i].peer_err_pct[k]) {
        ++s.peer_compared;
        peer_sum += std::fabs(*peer);
        s.peer_max_abs_err_pct = std::max(s.peer_max_abs_err_pct, std::fabs(*peer));
      }
    }
    if (s.compared) s.mean_abs_err_pct = sum / static_cast<double>(s.compared);
    if (s.peer_compared) s.peer_mean_abs_err_pct = peer_sum / static_cast<double>(s.peer_compared);
    if (s.peer_published)
      s.peer_published_mean_abs_err_pct = published_sum / static_cast<double>(s.peer_published);
    out.push_back(s);
  }
  return out;
}

}  // namespace trainsim
