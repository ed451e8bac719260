// The --compat option shared by perf, batch, search and validate.
#include "cli/commands.h"

namespace trainsim::cli {

void add_compat_option(CLI::App& app, std::string& value) {
  app.add_option("--compat", value, "simumax-1.2: reproduce SimuMax v1.2, quirks included (docs/compat.md)");
}

}  // namespace trainsim::cli
