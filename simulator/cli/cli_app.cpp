// CLI11 glue: errors become trainsim's UsageError (exit code 2), help goes to stdout.
#include "cli/cli_app.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <iterator>

#include "config/presets.h"
#include "core/error.h"
#include "core/text.h"

namespace trainsim::cli {

bool parse_args(CLI::App& app, const std::string& command, const std::vector<std::string>& args) {
  app.allow_extras();  // collected below, to report them with a suggestion
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 consumes from the back
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return false;
  } catch (const CLI::ParseError& e) {
    throw UsageError(command + ": " + e.what() + " (see --help)");
  }
  for (const std::string& extra : app.remaining()) {
    if (extra.size() < 2 || extra[0] != '-')
      throw UsageError(command + ": unexpected argument '" + extra + "'");
    std::vector<std::string> names;
    for (const CLI::Option* o : app.get_options())
      for (const auto& n : o->get_lnames()) names.push_back("--" + n);
    const std::string name = extra.substr(0, extra.find('='));
    std::string msg = command + ": unknown option '" + name + "'";
    if (std::string s = suggest(name, names); !s.empty()) msg += "; did you mean '" + s + "'?";
    throw UsageError(msg + " (see --help)");
  }
  return true;
}

std::string read_input(const std::string& path) {
  if (path != "-") return read_file(path);
  std::string text(std::istreambuf_iterator<char>(std::cin), {});
  if (std::cin.bad()) throw ConfigError("<stdin>", "", "cannot read standard input");
  return text;
}

}  // namespace trainsim::cli
