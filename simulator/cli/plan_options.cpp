// Plan options shared by the subcommands.
#include "cli/plan_options.h"

#include <charconv>
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

PlanRequest make_request(const PlanOptions& o, size_t strategy_index) {
  int stdin_users = 0;
  for (const std::string* v : {&o.model, &o.hf_config, &o.megatron_args}) stdin_users += *v == "-";
  for (const auto& v : o.strategies) stdin_users += v == "-";
  if (stdin_users > 1) throw UsageError("only one input can be read from stdin ('-')");
  auto json_input = [](const char* kind, const std::string& arg) {
    return arg == "-" ? ConfigText{read_input("-"), "<stdin>"} : resolve_config(kind, arg);
  };
  PlanRequest r;
  if (!o.model.empty()) r.model = json_input("model", o.model);
  if (!o.hf_config.empty()) {
    const std::string path = o.hf_config == "-" ? "-" : hf_config_path(o.hf_config);
    r.hf_config = ConfigText{read_input(path), path == "-" ? "<stdin>" : path};
  }
  r.hf.mtp = o.mtp;
  if (o.mtp && o.hf_config.empty()) throw UsageError("--mtp needs --hf-config");
  if (strategy_index < o.strategies.size()) r.strategy = json_input("strategy", o.strategies[strategy_index]);
  if (!o.megatron_args.empty())
    r.megatron = ConfigText{read_input(o.megatron_args), o.megatron_args == "-" ? "<stdin>" : o.megatron_args};
  for (const auto& s : o.sets) r.overrides.push_back(parse_set_option(s));
  for (size_t i = 0; i < o.shortcut_values.size(); ++i) {
    if (o.shortcut_values[i].empty()) continue;
    const Shortcut& sc = override_shortcuts()[i];
    // Every shortcut is a count: a malformed one is a usage error, like any malformed option value.
    const std::string& v = o.shortcut_values[i];
    int64_t n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size())
      throw UsageError(std::string("--") + sc.option + ": '" + o.shortcut_values[i] + "' is not an integer");
    r.overrides.push_back({sc.key, o.shortcut_values[i], std::string("--") + sc.option + " " + o.shortcut_values[i]});
  }
  return r;
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
