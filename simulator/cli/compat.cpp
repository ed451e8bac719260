// The --compat option shared by perf, batch, search and validate.
#include "cli/commands.h"
#include "core/error.h"
#include "core/text.h"

namespace trainsim::cli {

void add_compat_option(CLI::App& app, std::string& value) {
  app.add_option("--compat", value, "simumax-1.2: reproduce SimuMax v1.2, quirks included (docs/compat.md)");
}

Mode compat_mode(const std::string& value, const std::string& command) {
  if (value.empty()) return Mode::Default;
  if (auto m = parse_mode(value); m && *m == Mode::SimuMax12) return *m;
  std::string msg = command + ": --compat: unknown mode '" + value + "'; valid values: simumax-1.2";
  if (!suggest(value, {"simumax-1.2"}).empty()) msg += "; did you mean 'simumax-1.2'?";
  throw UsageError(msg);
}

}  // namespace trainsim::cli
