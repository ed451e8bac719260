// The `trainsim._trainsim` extension: the CLI's requests (perf, search, batch, validate) run by the
// same library code, their documents returned as the CLI writes them. The Python package
// (trainsim/__init__.py) turns dicts and paths into these calls and the documents into objects.
// The GIL is released while the library works; every call is independent (thread-safe).
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "inputs/mode.h"
#include "inputs/plan_request.h"
#include "system/presets.h"
#include "core/error.h"
#include "estimate/fit.h"
#include "estimate/throughput.h"
#include "views/report.h"
#include "cli/batch.h"
#include "views/breakdown.h"
#include "views/predict.h"
#include "search/report.h"
#include "cli/validate_report.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace trainsim {
namespace {

// Python exception types (created at import): Error, and its InputError and UsageError.
PyObject* g_error = nullptr;
PyObject* g_input_error = nullptr;
PyObject* g_usage_error = nullptr;

// "...; did you mean 'x'?" → x; "" when the message has no suggestion.
std::string suggestion_of(const std::string& msg) {
  const std::string key = "did you mean '";
  const size_t a = msg.rfind(key);
  if (a == std::string::npos) return "";
  const size_t b = msg.find('\'', a + key.size());
  return b == std::string::npos ? "" : msg.substr(a + key.size(), b - a - key.size());
}

// Raises `type` with the message; `issues` (file, JSON path, message) and the first issue's
// source and path as attributes, and the suggestion the message makes.
void raise(PyObject* type, const std::string& msg, const std::vector<Issue>& issues) {
  nb::object exc = nb::borrow(type)(msg);
  nb::list list;
  for (const Issue& i : issues) list.append(nb::make_tuple(i.source, i.path, i.message));
  exc.attr("issues") = list;
  exc.attr("source") = issues.empty() ? nb::none() : nb::cast(issues.front().source);
  exc.attr("path") = issues.empty() ? nb::none() : nb::cast(issues.front().path);
  const std::string s = suggestion_of(msg);
  exc.attr("suggestion") = s.empty() ? nb::none() : nb::cast(s);
  PyErr_SetObject(type, exc.ptr());
}

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const UsageError& e) {
    raise(g_usage_error, e.what(), {});
  } catch (const ConfigError& e) {
    raise(g_input_error, e.what(), e.issues());
  } catch (const Error& e) {
    raise(g_input_error, e.what(), {});
  }
}

// One input given as a preset name or file path (`arg`), or as a document (`doc`, JSON text or a
// Megatron command line) with the name messages give it (`label`).
struct Input {
  std::string arg, doc, label;
};

Input input_of(const nb::tuple& t) {
  return {nb::cast<std::string>(t[0]), nb::cast<std::string>(t[1]), nb::cast<std::string>(t[2])};
}

// A plan request as `trainsim perf`'s options give it: names and paths through make_request
// (the CLI's path), documents in place of the files.
struct PlanInput {
  Input model, strategy, hf_config, megatron;
  std::vector<std::string> sets;  // "key=value", as --set
};

PlanInput plan_input_of(const nb::dict& d) {
  PlanInput p;
  p.model = input_of(nb::cast<nb::tuple>(d["model"]));
  p.strategy = input_of(nb::cast<nb::tuple>(d["strategy"]));
  p.hf_config = input_of(nb::cast<nb::tuple>(d["hf_config"]));
  p.megatron = input_of(nb::cast<nb::tuple>(d["megatron_args"]));
  p.sets = nb::cast<std::vector<std::string>>(d["set"]);
  return p;
}

PlanArgs plan_args(const PlanInput& p) {
  PlanArgs a;
  a.model = p.model.arg;
  if (!p.strategy.arg.empty()) a.strategies.push_back(p.strategy.arg);
  a.hf_config = p.hf_config.arg;
  a.megatron_args = p.megatron.arg;
  a.sets = p.sets;
  a.shortcut_values.assign(override_shortcuts().size(), "");
  return a;
}

// Documents replace what make_request read.
void add_documents(const PlanInput& p, PlanRequest& r) {
  if (!p.model.label.empty()) r.model = ConfigText{p.model.doc, p.model.label};
  if (!p.strategy.label.empty()) r.strategy = ConfigText{p.strategy.doc, p.strategy.label};
  if (!p.hf_config.label.empty()) r.hf_config = ConfigText{p.hf_config.doc, p.hf_config.label};
  if (!p.megatron.label.empty()) r.megatron = ConfigText{p.megatron.doc, p.megatron.label};
}

ConfigText system_text(const Input& s) {
  if (!s.label.empty()) return {s.doc, s.label};
  return resolve_config("system", s.arg.empty() ? std::string(kDefaultSystem) : s.arg);
}

// `trainsim perf`: the request of cmd_perf.cpp, predicted by the same predict().
Prediction perf(const PlanInput& p, const Input& system, const std::string& mfu, const std::string& compat) {
  const Mode mode = compat_mode(compat, "perf");
  const MfuConvention convention = parse_mfu_convention(mfu, "--mfu");
  PlanRequest r = make_request(plan_args(p));
  add_documents(p, r);
  // A Megatron command line describes the user's own run: no default model then.
  const bool own = r.megatron.has_value();
  return predict(r, own ? "" : kDefaultModel, kDefaultStrategy, system_text(system), convention, mode);
}

struct Search {
  std::string csv, json, table, summary;
  std::vector<std::string> notes, not_modeled;
};

// `trainsim search`: the options of cmd_search.cpp, checked and run by the same code.
Search search_plans(const PlanInput& p, const Input& system, std::map<std::string, std::string> given,
                    bool use_alloc, const std::string& compat, const std::string& command) {
  SearchArgs a;
  a.given = std::move(given);
  a.given["system"] = system.arg;
  a.use_alloc = use_alloc;
  a.compat = compat;
  SearchDocuments docs;
  docs.add = [&](PlanRequest& r) { add_documents(p, r); };
  if (!system.label.empty()) docs.system = ConfigText{system.doc, system.label};
  SearchRun run = prepare_search(plan_args(p), a, {}, docs);
  const SearchResult res = search(run.plan.model, run.system, run.space, run.options);
  Search s;
  s.csv = search_csv(res);
  s.json = search_json(run, res, command);
  s.table = search_table(res);
  s.summary = search_summary(res);
  s.notes = run.plan.notes;
  s.not_modeled = run.plan.not_modeled;
  return s;
}

// `trainsim batch`: the CSV it writes, and the count of failed cases.
std::pair<std::string, int> batch_cases(const std::string& dir, const Input& system, const std::string& match,
                                        bool keep_going, const std::string& compat) {
  BatchOptions o;
  o.dir = dir;
  o.system = system.arg;
  o.match = match;
  o.keep_going = keep_going;
  o.mode = compat_mode(compat, "batch");
  if (!system.label.empty()) o.system_document = ConfigText{system.doc, system.label};
  const BatchRun b = prepare_batch(o);
  std::string csv;
  const BatchSummary s = run_batch(b, [&](const std::string& text) { csv += text; }, [](const std::string&) {});
  return {csv, s.failed};
}

// `trainsim validate --json`.
std::string validate_tables(const std::string& root, const std::vector<std::string>& wanted,
                            const std::vector<std::string>& swaps, const std::string& compat) {
  const Mode mode = compat_mode(compat, "validate");
  std::vector<TableRun> runs;
  for (auto& t : load_validation_tables(root, wanted, swaps)) runs.push_back(run_validation_table(std::move(t), mode));
  return validate_json(runs);
}

}  // namespace
}  // namespace trainsim

NB_MODULE(_trainsim, m) {
  using namespace trainsim;
  m.doc() = "trainsim's C++ library: the CLI's requests (see the trainsim package)";
  g_error = PyErr_NewExceptionWithDoc("trainsim.Error", "Bad input given to trainsim.", PyExc_ValueError, nullptr);
  g_input_error = PyErr_NewExceptionWithDoc(
      "trainsim.InputError",
      "Invalid input (a file, document, JSON path or value): the CLI's `error:` (exit code 1). "
      "Attributes: issues [(source, path, message)], source, path, suggestion.",
      g_error, nullptr);
  g_usage_error = PyErr_NewExceptionWithDoc(
      "trainsim.UsageError",
      "A bad option or argument: the CLI's `usage error:` (exit code 2). Attribute: suggestion.", g_error, nullptr);
  m.attr("Error") = nb::handle(g_error);
  m.attr("InputError") = nb::handle(g_input_error);
  m.attr("UsageError") = nb::handle(g_usage_error);
  nb::register_exception_translator(translate);

  nb::class_<Prediction>(m, "Prediction")
      .def("json", [](const Prediction& p) { return estimate_to_json(p.in, p.estimate); },
           nb::call_guard<nb::gil_scoped_release>(), "the `trainsim perf --json` document")
      .def("summary", [](const Prediction& p) { return estimate_summary(p.in, p.estimate); },
           nb::call_guard<nb::gil_scoped_release>(), "the `trainsim perf` summary")
      .def("breakdown_table", [](const Prediction& p, const std::string& level) {
             return breakdown_table(p.estimate, parse_breakdown_level(level, "perf: --breakdown"));
           }, "level"_a, "the summary's table of `--breakdown LEVEL`")
      .def_prop_ro("iteration_time_s", [](const Prediction& p) { return p.estimate.iteration_time_s; })
      .def_prop_ro("tokens_per_s_per_gpu", [](const Prediction& p) { return p.estimate.tokens_per_s_per_gpu; })
      .def_prop_ro("peak_reserved_bytes", [](const Prediction& p) { return p.estimate.peak_reserved_bytes(); })
      .def_prop_ro("fits", [](const Prediction& p) -> nb::object {
        const FitVerdict v = fit_verdict(p.estimate, fit_rule(p.in.system, p.estimate.mode));
        return v.known ? nb::cast(v.fits) : nb::none();
      })
      .def_prop_ro("fit_state", [](const Prediction& p) -> nb::object {
        const FitVerdict v = fit_verdict(p.estimate, fit_rule(p.in.system, p.estimate.mode));
        return v.known ? nb::cast(std::string(fit_state_name(v.state))) : nb::none();
      });

  m.def("perf", [](const nb::dict& plan, const nb::tuple& system, const std::string& mfu, const std::string& compat) {
          const PlanInput p = plan_input_of(plan);
          const Input sys = input_of(system);
          nb::gil_scoped_release release;
          return perf(p, sys, mfu, compat);
        }, "plan"_a, "system"_a, "mfu"_a, "compat"_a);

  m.def("search", [](const nb::dict& plan, const nb::tuple& system, const std::map<std::string, std::string>& given,
                     bool use_alloc, const std::string& compat) {
          const PlanInput p = plan_input_of(plan);
          const Input sys = input_of(system);
          Search s;
          {
            nb::gil_scoped_release release;
            s = search_plans(p, sys, given, use_alloc, compat, "trainsim.search()");
          }
          nb::dict d;
          d["csv"] = s.csv;
          d["json"] = s.json;
          d["table"] = s.table;
          d["summary"] = s.summary;
          d["notes"] = s.notes;
          d["not_modeled"] = s.not_modeled;
          return d;
        }, "plan"_a, "system"_a, "options"_a, "use_alloc"_a, "compat"_a);

  m.def("batch", [](const std::string& dir, const nb::tuple& system, const std::string& match, bool keep_going,
                    const std::string& compat) {
          const Input sys = input_of(system);
          std::pair<std::string, int> r;
          {
            nb::gil_scoped_release release;
            r = batch_cases(dir, sys, match, keep_going, compat);
          }
          nb::dict d;
          d["csv"] = r.first;
          d["failed"] = r.second;
          return d;
        }, "dir"_a, "system"_a, "match"_a, "keep_going"_a, "compat"_a);

  m.def("validate", &validate_tables, "dir"_a, "tables"_a, "systems"_a, "compat"_a,
        nb::call_guard<nb::gil_scoped_release>());
}
