// CLI11 glue: errors become trainsim's UsageError (exit code 2), help goes to stdout.
#include "cli/cli_app.h"

#include <algorithm>
#include <cstdio>

#include "system/presets.h"
#include "core/error.h"
#include "core/text.h"

namespace trainsim::cli {

namespace {

void collect_names(CLI::App& app, std::vector<std::string>& names) {
  for (const CLI::Option* o : app.get_options()) {
    for (const auto& n : o->get_lnames()) names.push_back("--" + n);
    for (const auto& n : o->get_snames()) names.push_back("-" + n);
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) collect_names(*sub, names);
}

// Throws the usage error for the first option no (sub)command declares, with a suggestion.
void reject_unknown_options(CLI::App& app, const std::string& command, const std::vector<std::string>& args) {
  std::vector<std::string> names;
  collect_names(app, names);
  for (const std::string& a : args) {
    if (a.size() < 2 || a[0] != '-' || (a[1] >= '0' && a[1] <= '9') || a[1] == '.') continue;  // "-", numbers
    const std::string name = a.substr(0, a.find('='));
    if (std::find(names.begin(), names.end(), name) != names.end()) continue;
    std::string msg = command + ": unknown option '" + name + "'";
    if (std::string s = suggest(name, names); !s.empty()) msg += "; did you mean '" + s + "'?";
    throw UsageError(msg + " (see --help)");
  }
}

}  // namespace

bool parse_args(CLI::App& app, const std::string& command, const std::vector<std::string>& args) {
  app.allow_extras();  // reported below, with a suggestion
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 consumes from the back
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return false;
  } catch (const CLI::ParseError& e) {
    reject_unknown_options(app, command, args);  // a misspelled option explains most errors
    throw UsageError(command + ": " + e.what() + " (see --help)");
  }
  const std::vector<std::string> extras = app.remaining(true);
  if (!extras.empty()) {
    reject_unknown_options(app, command, extras);
    throw UsageError(command + ": unexpected argument '" + extras.front() + "'");
  }
  return true;
}

}  // namespace trainsim::cli
