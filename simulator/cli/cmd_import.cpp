// `trainsim import hf CONFIG --out model.json` and `trainsim import megatron FILE --out-dir D`:
// the model and strategy JSON equivalent to a user's own inputs, to inspect or edit.
#include <cstdio>
#include <filesystem>

#include "cli/cli_app.h"
#include "cli/commands.h"
#include "cli/plan_options.h"
#include "inputs/hf_config.h"
#include "inputs/output_file.h"
#include "inputs/plan_request.h"
#include "core/error.h"

namespace trainsim::cli {

int cmd_import(const Args& args) {
  CLI::App app("Write the model (and strategy) JSON equivalent to a Hugging Face config.json or a "
               "Megatron-LM command line.",
               "trainsim import");
  app.require_subcommand(1);
  std::string hf_input, hf_out, meg_input, out_dir;
  bool mtp = false;
  CLI::App* hf = app.add_subcommand("hf", "Hugging Face config.json (or a folder holding one) → model JSON");
  hf->add_option("CONFIG", hf_input, "config.json, a folder holding one, or '-' for stdin")->required();
  hf->add_flag("--mtp", mtp, "keep DeepSeek-V3's multi-token prediction layers");
  hf->add_option("--out", hf_out, "model JSON to write (default: stdout)");
  CLI::App* meg = app.add_subcommand("megatron", "Megatron-LM command line → model.json (when it has model "
                                                 "flags or --hf-config) + strategy.json");
  meg->add_option("FILE", meg_input, "the command line, or '-' for stdin")->required();
  PlanOptions po;
  add_plan_options(*meg, po);
  meg->add_option("--out-dir", out_dir, "directory to write model.json and strategy.json into")->required();
  if (!parse_args(app, "import", args)) return 0;

  if (hf->parsed()) {
    const std::string path = hf_input == "-" ? "-" : hf_config_path(hf_input);
    HfOptions o;
    o.mtp = mtp;
    const HfModel m = load_hf_config(read_input(path), path == "-" ? "<stdin>" : path, o);
    for (const auto& n : m.notes) std::fprintf(stderr, "trainsim import: note: %s\n", n.c_str());
    const std::string text = model_to_json_text(m.model);
    if (hf_out.empty()) {
      std::fputs(text.c_str(), stdout);
    } else {
      write_file_atomic(hf_out, text);
      std::fprintf(stderr, "trainsim import: wrote %s\n", hf_out.c_str());
    }
    return 0;
  }
  if (!po.megatron_args.empty() || !po.strategies.empty())
    throw UsageError("import megatron: the command line is the FILE argument; --strategy and --megatron-args "
                     "do not apply");
  po.megatron_args = meg_input;
  const bool model_from_file = !po.model.empty() || !po.hf_config.empty();
  const PlanConfigs pc = build_plan(make_request(po), "", "");
  warn_about(pc, "import");
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw ConfigError(out_dir, "", "cannot create directory: " + ec.message());
  write_file_atomic(out_dir + "/model.json", model_to_json_text(pc.model));
  write_file_atomic(out_dir + "/strategy.json", strategy_to_json_text(pc.strategy));
  std::fprintf(stderr, "trainsim import: wrote %s/model.json (%s) and %s/strategy.json\n", out_dir.c_str(),
               model_from_file ? "from the model file" : "from the command line", out_dir.c_str());
  return 0;
}

}  // namespace trainsim::cli
