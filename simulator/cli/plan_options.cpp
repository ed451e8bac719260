// Plan options shared by the subcommands.
#include "cli/plan_options.h"

#include <cstdio>

#include "cli/cli_app.h"
#include "core/error.h"
#include "core/text.h"

namespace trainsim::cli {

void add_plan_options(CLI::App& app, PlanOptions& o, PlanOptionSet which) {
  app.add_option("--model", o.model, "model preset or JSON file ('-' = stdin)");
  app.add_option("--hf-config", o.hf_config,
                 "Hugging Face config.json, or a folder holding one ('-' = stdin)");
  app.add_flag("--mtp", o.mtp, "with --hf-config: keep DeepSeek-V3's multi-token prediction layers");
  auto* s = app.add_option("--strategy", o.strategies, "strategy preset or JSON file ('-' = stdin)");
  if (!which.strategy_repeatable) s->expected(1);
  app.add_option("--megatron-args", o.megatron_args,
                 "Megatron-LM command line (torchrun ... pretrain_gpt.py --flags), a file or '-' for stdin; "
                 "gives the strategy, and the model when it has model flags");
  app.add_option("--set", o.sets, "KEY=VALUE: override any model or strategy key (repeatable), also "
                                  "dp_size and global_batch_size");
  o.shortcut_values.assign(override_shortcuts().size(), "");
  if (!which.shortcuts) return;
  for (size_t i = 0; i < override_shortcuts().size(); ++i) {
    const Shortcut& sc = override_shortcuts()[i];
    app.add_option(std::string("--") + sc.option, o.shortcut_values[i],
                   std::string(sc.help) + "; applied after --set");
  }
}

void warn_about(const PlanConfigs& p, const std::string& command) {
  for (const auto& n : p.notes) std::fprintf(stderr, "trainsim %s: note: %s\n", command.c_str(), n.c_str());
  if (!p.not_modeled.empty())
    std::fprintf(stderr, "trainsim %s: warning: given but not modeled: %s\n", command.c_str(),
                 join(p.not_modeled).c_str());
  for (const NoEffect& n : p.no_effect)
    std::fprintf(stderr, "trainsim %s: warning: %s\n", command.c_str(), no_effect_line(n).c_str());
}

}  // namespace trainsim::cli
