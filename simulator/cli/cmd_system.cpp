// `trainsim system build`: merges kernels_bench and comm_bench measurements into a base system
// file and writes a system JSON the simulator reads back.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/cli_app.h"
#include "cli/commands.h"
#include "config/comm_merge.h"
#include "config/kernels_merge.h"
#include "config/output_file.h"
#include "config/presets.h"
#include "config/system_config.h"
#include "core/error.h"

namespace trainsim::cli {

int cmd_system(const Args& args) {
  CLI::App app("system build: merge kernels_bench and comm_bench measurements into a base system file.",
               "trainsim system build");
  std::string action, base_arg, kernels, comm, out, name;
  app.add_option("ACTION", action, "the only action: build")->required()->check(CLI::IsMember({"build"}));
  app.add_option("--base", base_arg, "system preset or file to start from (declared peaks, networks, latencies)")
      ->required();
  app.add_option("--kernels", kernels, "kernels_bench output (kernels.json)");
  app.add_option("--comm", comm, "comm_bench output (comm.json)");
  app.add_option("--out", out, "where to write the merged system JSON")->required();
  app.add_option("--name", name, "sys_name of the result (default: the base's)");
  if (!parse_args(app, "system build", args)) return 0;
  if (kernels.empty() && comm.empty()) throw UsageError("system build: give --kernels, --comm or both");

  ConfigText base = resolve_config("system", base_arg);
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
  if (!kernels.empty()) merge_kernels(sys, read_file(kernels), kernels);
  if (!comm.empty()) merge_comm(sys, read_file(comm), comm);
  if (!name.empty()) sys.sys_name = name;
  if (sys.schema_version.empty()) sys.schema_version = "1.0.0";

  std::string text = system_to_json_text(sys);
  // The file must load in the simulator; a failure here is a bug in a merge, not user input.
  (void)load_system(text, out + " (merged)");
  write_file_atomic(out, text);
  std::fprintf(stderr, "trainsim system build: wrote %s\n", out.c_str());
  return 0;
}

}  // namespace trainsim::cli
