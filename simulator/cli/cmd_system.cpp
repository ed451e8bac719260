// `trainsim system build`: merges kernels_bench and comm_bench measurements into a base system
// file and writes a system JSON the simulator reads back.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/commands.h"
#include "config/comm_merge.h"
#include "config/kernels_merge.h"
#include "config/output_file.h"
#include "config/presets.h"
#include "config/system_config.h"
#include "core/error.h"

namespace trainsim::cli {

int cmd_system(const Args& args) {
  ArgParser p("system build",
              "trainsim system build --base PRESET_OR_FILE [--kernels kernels.json] [--comm comm.json] "
              "--out system.json [--name SYS_NAME]");
  p.positional("build", "the only action");
  p.option("base", "system preset or file to start from (declared peaks, networks, latencies)");
  p.option("kernels", "kernels_bench output (kernels.json)");
  p.option("comm", "comm_bench output (comm.json)");
  p.option("out", "where to write the merged system JSON");
  p.option("name", "sys_name of the result (default: the base's)");
  if (!p.parse(args)) return 0;
  if (p.positionals().size() != 1 || p.positionals()[0] != "build")
    throw UsageError("system: expected the action 'build'\n" + p.help());
  for (const char* required : {"base", "out"})
    if (!p.has(required)) throw UsageError(std::string("system build: --") + required + " is required\n" + p.help());
  if (!p.has("kernels") && !p.has("comm"))
    throw UsageError("system build: give --kernels, --comm or both\n" + p.help());

  ConfigText base = resolve_config("system", p.get("base"));
  SystemConfig sys = load_system(base.text, base.source);
  // Provenance of the result: this command plus what each merge adds under its own key.
  nlohmann::json prov = nlohmann::json::object();
  prov["tool"] = "trainsim system build";
  prov["version"] = TRAINSIM_VERSION;
  prov["command"] = command_line("trainsim system", args);
  prov["date"] = utc_timestamp();
  prov["base"] = base.source;
  if (!sys.provenance_json.empty()) prov["base_provenance"] = nlohmann::json::parse(sys.provenance_json);
  sys.provenance_json = prov.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (p.has("kernels")) merge_kernels(sys, read_file(p.get("kernels")), p.get("kernels"));
  if (p.has("comm")) merge_comm(sys, read_file(p.get("comm")), p.get("comm"));
  if (p.has("name")) sys.sys_name = p.get("name");
  if (sys.schema_version.empty()) sys.schema_version = "1.0.0";

  std::string text = system_to_json_text(sys);
  // The file must load in the simulator; a failure here is a bug in a merge, not user input.
  (void)load_system(text, p.get("out") + " (merged)");
  write_file_atomic(p.get("out"), text);
  std::fprintf(stderr, "trainsim system build: wrote %s\n", p.get("out").c_str());
  return 0;
}

}  // namespace trainsim::cli
