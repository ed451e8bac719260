// `trainsim presets`: the embedded model / strategy / system presets.
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "config/presets.h"
#include "core/error.h"

namespace trainsim::cli {

int cmd_presets(const Args& args) {
  ArgParser p("presets", "trainsim presets [model|strategy|system]");
  p.positional("KIND", "only this kind (default: all)");
  if (!p.parse(args)) return 0;
  std::vector<std::string> kinds = {"model", "strategy", "system"};
  if (!p.positionals().empty()) {
    const std::string k = p.positionals()[0];
    if (k != "model" && k != "strategy" && k != "system")
      throw UsageError("presets: unknown kind '" + k + "'; valid values: model, strategy, system");
    kinds = {k};
  }
  for (const auto& k : kinds) {
    std::printf("%s:\n", k.c_str());
    for (const auto& n : preset_names(k)) std::printf("  %s\n", n.c_str());
  }
  return 0;
}

}  // namespace trainsim::cli
