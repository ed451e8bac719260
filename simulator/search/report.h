// `trainsim search` as a library: the command's options, as given on its command line, turned
// into a search; and its outputs. The CLI and the Python module run the same code.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "inputs/plan_request.h"
#include "system/system_config.h"
#include "search/search.h"

namespace trainsim {

/// The search options as texts, keyed by the CLI's long option name without dashes ("system",
/// "gpus", "global-batch", "seq", "top", "rank-by", "threads", "gmi-error", "tp", "pp", "cp",
/// "ep", "etp", "vpp", "mbs", "zero", "recompute", "sp"); lists as "1,2,4" or "1-16".
struct SearchArgs {
  std::map<std::string, std::string> given;
  bool use_reserved = false, use_alloc = false, no_tight = false;
  std::string compat;
  [[nodiscard]] bool has(const std::string& k) const { return given.count(k) && !given.at(k).empty(); }
  [[nodiscard]] std::string get(const std::string& k, const std::string& fallback = "") const {
    return has(k) ? given.at(k) : fallback;
  }
};

/// A search ready to run: the base plan, the system, the options and the space.
struct SearchRun {
  PlanConfigs plan;
  SystemConfig system;
  SearchOptions options;
  SearchSpace space;
  std::string rank_by;  // as given: time, mfu or tokens
};

/// Documents given in place of files (the Python module): `add` puts them into the request that
/// the plan arguments made; `system` replaces the "system" option.
struct SearchDocuments {
  std::function<void(PlanRequest&)> add;
  std::optional<ConfigText> system;
};

/// Checks the options and builds the search (UsageError / ConfigError with the CLI's messages);
/// `on_plan` sees the base plan as soon as it is built (the CLI prints its notes there).
[[nodiscard]] SearchRun prepare_search(const PlanArgs& plan, const SearchArgs& args,
                                       const std::function<void(const PlanConfigs&)>& on_plan = {},
                                       const SearchDocuments& documents = {});

/// The model's name in reports: its model_name, else where it came from.
[[nodiscard]] std::string search_model_name(const SearchRun& run);

/// The ranked table, the counts line(s), the CSV (`--csv`) and the JSON report (`--json`;
/// `command` goes into its provenance) of a result.
[[nodiscard]] std::string search_table(const SearchResult& r);
[[nodiscard]] std::string search_summary(const SearchResult& r);
[[nodiscard]] std::string search_csv(const SearchResult& r);
[[nodiscard]] std::string search_json(const SearchRun& run, const SearchResult& r, const std::string& command);
/// "base plan (as given): 27.310 s, 81.20 GiB, does not fit" or its rank among the feasible plans.
[[nodiscard]] std::string search_base_line(const SearchResult& r);
/// The Megatron-LM flags of the fields a search chooses (sizes, split, dispatcher, overlaps,
/// sharding, micro batch, recompute), flag and value ("" for a switch that is set).
[[nodiscard]] std::vector<std::pair<std::string, std::string>> megatron_flags(const StrategyConfig& s);
/// `--explain`: the best plan's Megatron flags that differ from the base plan's, and the time terms
/// of the critical stage that moved by 0.5 % of the base step or more.
[[nodiscard]] std::string search_explain(const SearchResult& r);

}  // namespace trainsim
