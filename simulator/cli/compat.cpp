// The --compat option shared by perf, batch, search and validate.
#include "cli/commands.h"
#include "core/error.h"
#include "core/text.h"

namespace trainsim::cli {

Mode compat_mode(const ArgParser& p) {
  if (!p.has("compat")) return Mode::Default;
  const std::string v = p.get("compat");
  if (auto m = parse_mode(v); m && *m == Mode::SimuMax12) return *m;
  std::string msg = p.command() + ": --compat: unknown mode '" + v + "'; valid values: simumax-1.2";
  if (!suggest(v, {"simumax-1.2"}).empty()) msg += "; did you mean 'simumax-1.2'?";
  throw UsageError(msg);
}

void add_compat_option(ArgParser& p) {
  p.option("compat", "simumax-1.2: reproduce SimuMax v1.2, quirks included (docs/compat.md)");
}

}  // namespace trainsim::cli
