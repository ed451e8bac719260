// Combining the user's inputs into one plan: documents first, then overrides, then the values
// derived from others (world size from dp, micro-batch count from the global batch).
#include "inputs/plan_request.h"

#include <algorithm>
#include <charconv>
#include <set>

#include <nlohmann/json.hpp>

#include "inputs/input_file.h"
#include "inputs/json_reader.h"
#include "inputs/megatron_args.h"
#include "core/error.h"
#include "core/text.h"

namespace trainsim {
namespace {

// Model keys that describe how Megatron-LM runs the model rather than the architecture: a
// Megatron command line sets them even when the architecture comes from a config file.
const std::set<std::string> kImplementationKeys = {"group_linear_mode", "moe_pad_expert_input_to_capacity",
                                                   "capacity", "mtp_num_layers"};
// Values a model file leaves at their default (for comparing with Megatron flags).
const nlohmann::json kModelDefaults = {
    {"use_swiglu", false},        {"expert_num", 1},           {"attention_type", "mha"},
    {"dense_layers", 0},          {"tie_word_embeddings", false}, {"qkv_bias", false},
    {"linear_bias", false},       {"router_bias", false},      {"qk_layernorm", false},
    {"attention_sinks", false},   {"normalization", "RMSNorm"}};

nlohmann::json typed_value(const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    return text;  // a bare word is a string
  }
}

int64_t int_key(const nlohmann::json& doc, const char* key, int64_t fallback) {
  auto it = doc.find(key);
  return it != doc.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

// Model flags that describe only MoE layers or MLA attention: Megatron-LM reads them only with
// --num-experts / --multi-latent-attention, elsewhere they change nothing.
const std::set<std::string> kMoeOnlyKeys = {"topk", "moe_ffn_hidden_size", "moe_shared_expert_intermediate_size",
                                            "moe_layer_freq", "dense_layers"};
const std::set<std::string> kMlaOnlyKeys = {"q_lora_rank", "kv_lora_rank", "qk_head_dim", "qk_pos_emb_head_dim",
                                            "v_head_dim"};

// Removes from the command line's model keys those the architecture `arch` (the model file, or
// the line itself) has no use for; reports each one that differs from the default.
void drop_moot_model_flags(MegatronArgs& meg, const nlohmann::json& arch, std::vector<NoEffect>& out) {
  const bool moe = int_key(arch, "expert_num", 1) > 1;
  const bool mla = arch.contains("attention_type") && arch["attention_type"] == "mla";
  for (auto it = meg.model.begin(); it != meg.model.end();) {
    const std::string key = it.key();
    const bool moe_key = kMoeOnlyKeys.count(key) > 0, mla_key = kMlaOnlyKeys.count(key) > 0;
    if ((!moe_key || moe) && (!mla_key || mla)) {
      ++it;
      continue;
    }
    if (!kModelDefaults.contains(key) || kModelDefaults[key] != it.value()) {
      const auto flag = meg.model_flags.find(key);
      out.push_back({key, it.value().dump(),
                     std::string("changes nothing with ") + (moe_key ? "a dense model" : "attention other than MLA") +
                         (flag != meg.model_flags.end() ? " (" + flag->second + ")" : "")});
    }
    meg.model_flags.erase(key);
    it = meg.model.erase(it);
  }
}

// A size the derived values may multiply without overflow; anything else is left for the
// strategy reader to reject with its own message.
bool sane(int64_t v) { return v >= 1 && v <= (1 << 16); }

std::string with_origins(const std::string& source, const std::vector<std::string>& origins) {
  return origins.empty() ? source : source + " with " + join(origins);
}

}  // namespace

const std::vector<Shortcut>& override_shortcuts() {
  static const std::vector<Shortcut> shortcuts = {
      {"tp", "tp_size", "tensor parallel size (tp_size)"},
      {"pp", "pp_size", "pipeline parallel size (pp_size)"},
      {"cp", "cp_size", "context parallel size (cp_size)"},
      {"ep", "ep_size", "expert parallel size (ep_size)"},
      {"etp", "etp_size", "expert tensor parallel size (etp_size)"},
      {"vpp", "interleaving_size", "virtual pipeline stages per rank (interleaving_size)"},
      {"dp", "dp_size", "data parallel size: sets world_size = dp·tp·cp·pp"},
      {"mbs", "micro_batch_size", "micro batch size (micro_batch_size)"},
      {"gbs", "global_batch_size", "global batch size: sets micro_batch_num = gbs / (mbs·dp)"},
      {"seq", "seq_len", "sequence length (seq_len)"},
      {"world-size", "world_size", "number of GPUs (world_size)"},
  };
  return shortcuts;
}

bool is_system_key(const std::string& key) { return key.find('.') != std::string::npos; }

ConfigText apply_system_overrides(const ConfigText& system, const std::vector<Override>& overrides) {
  if (std::none_of(overrides.begin(), overrides.end(), [](const Override& o) { return is_system_key(o.key); }))
    return system;
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(system.text);
  } catch (const nlohmann::json::exception&) {
    return system;  // the system reader reports the malformed document
  }
  std::string origins;
  for (const Override& o : overrides) {
    if (!is_system_key(o.key)) continue;
    // A path of existing keys: a typo is an error naming the key that is not there.
    nlohmann::json* at = &doc;
    std::string walked;
    size_t start = 0;
    while (true) {
      const size_t dot = o.key.find('.', start);
      const std::string part = o.key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (!at->is_object() || !at->contains(part)) {
        std::vector<std::string> have;
        if (at->is_object())
          for (const auto& [k, v] : at->items()) have.push_back(k);
        std::string msg = o.origin + ": the system " + system.source + " has no key '" + part + "'" +
                          (walked.empty() ? "" : " under '" + walked + "'");
        if (!have.empty()) msg += "; keys there: " + join(have);
        if (std::string s = suggest(part, have); !s.empty()) msg += "; did you mean '" + s + "'?";
        throw UsageError(msg);
      }
      at = &(*at)[part];
      walked += (walked.empty() ? "" : ".") + part;
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    if (at->is_object() || at->is_array())
      throw UsageError(o.origin + ": '" + o.key + "' is a section of the system; set one of its values");
    *at = typed_value(o.value);
    origins += (origins.empty() ? "" : ", ") + o.origin;
  }
  return {doc.dump(1), system.source + " with " + origins};
}

Override parse_set_option(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UsageError("--set: expected key=value, got '" + text + "'");
  Override o{text.substr(0, eq), text.substr(eq + 1), "--set " + text};
  if (is_system_key(o.key)) return o;  // checked against the system document when it is read
  std::vector<std::string> keys = strategy_keys();
  keys.insert(keys.end(), model_keys().begin(), model_keys().end());
  keys.emplace_back("dp_size");
  keys.emplace_back("global_batch_size");
  if (std::find(keys.begin(), keys.end(), o.key) == keys.end()) {
    std::string msg = "--set: unknown key '" + o.key +
                      "' (model or strategy keys, dp_size, global_batch_size, or a system key path such as "
                      "accelerator.mem_gbs)";
    // "tp" → "tp_size" before the edit distance, which finds "fp8" as close.
    std::string s = std::find(keys.begin(), keys.end(), o.key + "_size") != keys.end() ? o.key + "_size"
                                                                                       : suggest(o.key, keys);
    if (!s.empty()) msg += "; did you mean '" + s + "'?";
    throw UsageError(msg);
  }
  return o;
}

namespace {

// One build_plan call: the documents as they are assembled, and where each value came from.
class PlanBuilder {
 public:
  PlanBuilder(const PlanRequest& request, const std::string& model_fallback, const std::string& strategy_fallback)
      : req(request), default_model(model_fallback), default_strategy(strategy_fallback) {}

  PlanConfigs run() {
    if (req.model && req.hf_config) throw UsageError("--model and --hf-config exclude each other");
    if (req.strategy && req.megatron) throw UsageError("--strategy and --megatron-args exclude each other");
    read_megatron();
    model_document();
    strategy_document();
    apply_overrides();
    megatron_implicit_values();
    world_and_batch();
    out.strategy = load_strategy(strategy_doc.dump(), out.strategy_source);
    if (req.normalize) {
      std::vector<NoEffect> off = normalize_strategy(out.model, out.strategy, req.mode, out.model_source);
      out.no_effect.insert(out.no_effect.end(), off.begin(), off.end());
    }
    return std::move(out);
  }

 private:
  const PlanRequest& req;
  const std::string& default_model;
  const std::string& default_strategy;
  PlanConfigs out;
  std::optional<MegatronArgs> meg;
  nlohmann::json model_doc, strategy_doc;
  std::string model_source, strategy_source;
  std::vector<std::string> model_origins, strategy_origins;
  std::optional<std::pair<int64_t, std::string>> dp, gbs;  // wait until the sizes are final

  bool overridden(const char* key) const {
    return std::any_of(req.overrides.begin(), req.overrides.end(), [&](const Override& o) { return o.key == key; });
  }

  void read_megatron() {
    if (req.megatron) {
      meg = parse_megatron_args(req.megatron->text, req.megatron->source);
      out.not_modeled = meg->not_modeled;
      out.ignored = meg->ignored;
    }
  }

  // The model document: --hf-config, --model, the command line's model flags or the default.
  void model_document() {
    if (req.hf_config) {
      HfModel hm = load_hf_config(req.hf_config->text, req.hf_config->source, req.hf);
      model_doc = nlohmann::json::parse(model_to_json_text(hm.model));
      model_source = req.hf_config->source;
      out.notes = hm.notes;
    } else if (req.model) {
      model_doc = parse_json(req.model->text, req.model->source);
      model_source = req.model->source;
    }
    if (meg && !meg->model.empty()) {
      drop_moot_model_flags(*meg, model_source.empty() ? meg->model : model_doc, out.no_effect);
      if (model_source.empty()) {
        model_doc = megatron_model_json(*meg);
        model_source = meg->source;
        IssueList missing(meg->source);
        for (const auto& [key, flag] : {std::pair{"layer_num", "--num-layers"}, {"hidden_size", "--hidden-size"},
                                        {"head_num", "--num-attention-heads"}, {"vocab_size", "--vocab-size"}})
          if (!model_doc.contains(key))
            missing.add(flag, std::string("missing: the model needs it") +
                                  (key == std::string("vocab_size") ? " (Megatron-LM reads it from the tokenizer)" : "") +
                                  "; give it, or the architecture with --hf-config / --model");
        missing.throw_if_any();
      } else {
        IssueList issues(meg->source);
        for (const auto& [key, value] : meg->model.items()) {
          if (kImplementationKeys.count(key)) {
            model_doc[key] = value;
            continue;
          }
          // The dense FFN width of a model without dense layers is unused (Mixtral's config has none).
          if (key == "intermediate_size" && !model_doc.contains(key) && int_key(model_doc, "expert_num", 1) > 1 &&
              int_key(model_doc, "dense_layers", 0) == 0)
            continue;
          const nlohmann::json* base = model_doc.contains(key) ? &model_doc[key]
                                       : kModelDefaults.contains(key) ? &kModelDefaults[key] : nullptr;
          if (!base || *base != value)
            issues.add(meg->model_flags[key], "gives " + key + " = " + value.dump() + " but " + model_source +
                                                  " has " + (base ? base->dump() : std::string("none")));
        }
        issues.throw_if_any();
      }
    }
    // How Megatron runs the experts, unless the command line says otherwise.
    if (meg && !model_source.empty() && model_source != meg->source && int_key(model_doc, "expert_num", 1) > 1)
      model_doc.update(megatron_moe_defaults(*meg));
    if (model_source.empty()) {
      if (default_model.empty())
        throw UsageError("a model is needed: --model, --hf-config, or model flags in --megatron-args");
      const ConfigText t = resolve_config("model", default_model);
      model_doc = parse_json(t.text, t.source);
      model_source = t.source;
    }
  }

  // The strategy document: --strategy, the command line or the default.
  void strategy_document() {
    if (req.strategy) {
      strategy_doc = parse_json(req.strategy->text, req.strategy->source);
      strategy_source = req.strategy->source;
    } else if (meg) {
      strategy_doc = meg->strategy;
      strategy_source = meg->source;
      if (meg->world_size) strategy_doc["world_size"] = *meg->world_size;
    } else {
      if (default_strategy.empty()) throw UsageError("a strategy is needed: --strategy or --megatron-args");
      const ConfigText t = resolve_config("strategy", default_strategy);
      strategy_doc = parse_json(t.text, t.source);
      strategy_source = t.source;
    }
  }

  // --set and the shortcuts, in order; dp_size and global_batch_size wait until the sizes are final.
  void apply_overrides() {
    const std::vector<std::string> skeys = strategy_keys();
    for (const Override& o : req.overrides) {
      if (is_system_key(o.key)) continue;  // applied to the system document (apply_system_overrides)
      const nlohmann::json v = typed_value(o.value);
      if (o.key == "dp_size" || o.key == "global_batch_size") {
        if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > (int64_t{1} << 32))
          throw UsageError(o.origin + ": expected an integer in 1..2^32, got '" + o.value + "'");
        (o.key == "dp_size" ? dp : gbs) = std::make_pair(v.get<int64_t>(), o.origin);
        strategy_origins.push_back(o.origin);
      } else if (std::find(skeys.begin(), skeys.end(), o.key) != skeys.end()) {
        strategy_doc[o.key] = v;
        strategy_origins.push_back(o.origin);
      } else {
        model_doc[o.key] = v;
        model_origins.push_back(o.origin);
      }
    }
    out.model_source = with_origins(model_source, model_origins);
    out.strategy_source = with_origins(strategy_source, strategy_origins);
    out.model = load_model(model_doc.dump(), out.model_source);
    if (!strategy_doc.is_object()) (void)load_strategy(strategy_doc.dump(), out.strategy_source);  // type error
  }

  // Megatron's own rules for what the command line leaves implicit.
  void megatron_implicit_values() {
    if (!meg || req.strategy) return;
    // Megatron's own rules for what the command line leaves implicit.
    const char* missing = !strategy_doc.contains("seq_len") ? "--seq-length"
                          : !strategy_doc.contains("micro_batch_size") ? "--micro-batch-size" : nullptr;
    if (missing) throw ConfigError(meg->source, missing, "required by Megatron-LM and missing");
    if (!meg->world_size && !overridden("world_size") && !dp)
      throw UsageError(meg->source + ": the world size is unknown: give a torchrun/srun prefix "
                       "(--nproc-per-node, --nnodes), --world-size or --dp");
    const int64_t pp = int_key(strategy_doc, "pp_size", 1);
    if (meg->layers_per_virtual_stage && !overridden("interleaving_size") && sane(pp)) {
      // Megatron (arguments.py): an accounted embedding / loss counts as one layer each.
      const int64_t n = *meg->layers_per_virtual_stage;
      const auto counted = [&](const char* key) {
        return strategy_doc.contains(key) && strategy_doc[key].is_boolean() && strategy_doc[key].get<bool>() ? 1 : 0;
      };
      const int64_t layers = out.model.layer_num + counted("account_for_embedding_in_pipeline_split") +
                             counted("account_for_loss_in_pipeline_split");
      if (!sane(n) || layers % (pp * n) != 0)
        throw ConfigError(meg->source, "--num-layers-per-virtual-pipeline-stage",
                          strprintf("%lld layers per virtual stage do not divide %lld layers over pp %lld",
                                    static_cast<long long>(n), static_cast<long long>(layers),
                                    static_cast<long long>(pp)));
      strategy_doc["interleaving_size"] = layers / (pp * n);
    }
    if (meg->recompute_all_layers && !overridden("recompute_layer_num"))
      strategy_doc["recompute_layer_num"] = out.model.layer_num;
    if (out.model.is_moe() && !meg->expert_tp_given && !overridden("etp_size"))
      strategy_doc["etp_size"] = int_key(strategy_doc, "tp_size", 1);  // Megatron: etp defaults to tp
    const bool compat = req.mode == Mode::SimuMax12;
    if (int_key(strategy_doc, "cp_size", 1) > 1 && !overridden("cp_comm_type")) {
      if (!compat)
        strategy_doc["cp_comm_type"] = meg->cp_comm_type;  // Megatron's default is p2p
      else if (meg->cp_comm_type != "a2a")
        out.not_modeled.push_back("--cp-comm-type " + meg->cp_comm_type + ": SimuMax v1.2 has a2a only (simulated as a2a)");
    }
    // The MoE probabilities path of every release this reader follows (core >= 0.14): the token
    // dispatcher permutes the router's probabilities with the tokens and sends them through the
    // all-to-all (`permuted_probs`), the experts apply them inside the activation
    // (`weighted_bias_swiglu_impl`), and the unpermutation gets no probabilities, so it keeps
    // nothing for the backward (core <= 0.13 multiplied there and kept the experts' output,
    // P·H·2 bytes per MoE layer and micro-batch in flight). No flag: the strategy key.
    if (out.model.is_moe() && !overridden("dispatch_probs")) strategy_doc["dispatch_probs"] = true;
    if (out.model.is_moe() && !overridden("moe_token_dispatcher_type")) {
      if (!compat)
        strategy_doc["moe_token_dispatcher_type"] = meg->moe_dispatcher;  // Megatron's default is allgather
      else if (meg->moe_dispatcher != "alltoall")
        out.not_modeled.push_back("--moe-token-dispatcher-type " + meg->moe_dispatcher +
                                  ": SimuMax v1.2 has all2all only (simulated as alltoall)");
    }
    // SimuMax v1.2 has none of these: the flags stay warnings there.
    for (const char* key : {"hierarchical_context_parallel_sizes", "moe_enable_deepep", "moe_flex_dispatcher_backend",
                            "moe_deepep_num_sms", "moe_router_fusion", "moe_router_score_function",
                            "moe_router_num_groups", "moe_router_group_topk", "moe_aux_loss_coeff", "moe_z_loss_coeff",
                            "moe_router_force_load_balancing", "moe_router_padding_for_fp8", "moe_hybridep_num_sms",
                            "moe_permute_fusion",
                            "moe_router_load_balancing_type", "moe_shared_expert_overlap"}) {
      if (!compat || !strategy_doc.contains(key) || overridden(key)) continue;
      std::string flag = std::string("--") + key;
      std::replace(flag.begin(), flag.end(), '_', '-');
      out.not_modeled.push_back(flag + ": not part of SimuMax v1.2");
      strategy_doc.erase(key);
    }
  }

  // The world size from --dp, the micro-batch count from the global batch.
  void world_and_batch() {
    const int64_t tp = int_key(strategy_doc, "tp_size", 1), cp = int_key(strategy_doc, "cp_size", 1),
                  pp = int_key(strategy_doc, "pp_size", 1);
    const bool sizes_ok = sane(tp) && sane(cp) && sane(pp);
    if (dp && sizes_ok) {
      const double world = static_cast<double>(dp->first) * static_cast<double>(tp * cp * pp);
      if (world > (1 << 24))
        throw ConfigError(dp->second, "", strprintf("world size dp·tp·cp·pp = %.0f is larger than the supported "
                                                    "maximum 16777216", world));
      strategy_doc["world_size"] = dp->first * tp * cp * pp;
    }
    if (!gbs && meg && !req.strategy && meg->global_batch_size)
      gbs = std::make_pair(*meg->global_batch_size, std::string("--global-batch-size"));
    const int64_t world = int_key(strategy_doc, "world_size", 8);
    // Sizes that do not factor the world size leave the micro-batch count alone: the plan check
    // then reports the root cause (tp 3 on 64 GPUs, tp not dividing the heads), not the batch.
    if (gbs && sizes_ok && world >= 1 && world % (tp * cp * pp) == 0) {
      const int64_t mbs = int_key(strategy_doc, "micro_batch_size", 1);
      const int64_t d = world / (tp * cp * pp);
      if (!sane(mbs) || d > (int64_t{1} << 32) || gbs->first % (mbs * d) != 0)
        throw ConfigError(gbs->second, "",
                          strprintf("global batch %lld is not a multiple of micro_batch_size·dp = %lld·%lld",
                                    static_cast<long long>(gbs->first), static_cast<long long>(mbs),
                                    static_cast<long long>(d)));
      strategy_doc["micro_batch_num"] = gbs->first / (mbs * d);
    }
  }
};

}  // namespace

PlanConfigs build_plan(const PlanRequest& req, const std::string& default_model,
                       const std::string& default_strategy) {
  return PlanBuilder(req, default_model, default_strategy).run();
}

PlanRequest make_request(const PlanArgs& o, size_t strategy_index) {
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

}  // namespace trainsim
