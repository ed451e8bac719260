// `trainsim presets`: the embedded model / strategy / system presets.
#include <cstdio>

#include "cli/cli_app.h"
#include "cli/commands.h"
#include "system/presets.h"

namespace trainsim::cli {

int cmd_presets(const Args& args) {
  CLI::App app("List the embedded model, strategy and system presets.", "trainsim presets");
  std::string kind;
  app.add_option("KIND", kind, "only this kind (default: all)")->check(CLI::IsMember({"model", "strategy", "system"}));
  if (!parse_args(app, "presets", args)) return 0;
  std::vector<std::string> kinds = {"model", "strategy", "system"};
  if (!kind.empty()) kinds = {kind};
  for (const auto& k : kinds) {
    std::printf("%s:\n", k.c_str());
    for (const auto& n : preset_names(k)) std::printf("  %s\n", n.c_str());
  }
  return 0;
}

}  // namespace trainsim::cli
