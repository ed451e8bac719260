// Megatron-LM command-line reader. Every flag Megatron accepts falls into one of four classes,
// decided by the rule table below (one row per flag, or per flag=value where the value decides):
// model and strategy rows set keys (a JSON template, `$v` = the value), special rows are read by
// code that needs several flags together, not_modeled rows are reported, the rest is ignored.
#include "inputs/megatron_args.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.h"
#include "core/text.h"
#include "inputs/megatron_rules.h"

namespace trainsim {
namespace detail {
extern const char* const kMegatronFlagsTsv;
}  // namespace detail

namespace {

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, '\t')) out.push_back(cell);
  if (!line.empty() && line.back() == '\t') out.emplace_back();
  return out;
}

std::vector<std::string> split_on(const std::string& text, char sep) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, sep)) out.push_back(item);
  return out;
}

// Integers up to 2^53 (exact in a double); larger values are not sizes of anything real.
bool parse_int(const std::string& s, int64_t& out) {
  double d = 0;
  if (!parse_double(s, d) || s.find_first_of(".eE") != std::string::npos || std::abs(d) > 9007199254740992.0)
    return false;
  out = static_cast<int64_t>(d);
  return true;
}

// The launcher's world size: torchrun --nproc-per-node × --nnodes, srun --ntasks (or
// --ntasks-per-node × --nodes), mpirun -np.
std::optional<int64_t> launcher_world_size(const std::vector<std::string>& words, const std::string& source) {
  std::map<std::string, std::string> opt;
  for (size_t i = 0; i < words.size(); ++i) {
    std::string w = words[i], value;
    const auto eq = w.find('=');
    const bool has_eq = w.rfind("-", 0) == 0 && eq != std::string::npos;
    if (has_eq) {
      value = w.substr(eq + 1);
      w.resize(eq);
    }
    static const char* const kKnown[] = {"--nproc_per_node", "--nproc-per-node", "--nnodes", "--ntasks",
                                         "-n", "--nodes", "-N", "--ntasks-per-node", "-np"};
    if (std::find(std::begin(kKnown), std::end(kKnown), w) == std::end(kKnown)) continue;
    if (!has_eq) {
      if (i + 1 >= words.size()) throw ConfigError(source, "", "launcher option " + w + " needs a value");
      value = words[++i];
    }
    std::replace(w.begin(), w.end(), '_', '-');
    opt[w] = value;
  }
  auto get = [&](std::initializer_list<const char*> names) -> std::optional<int64_t> {
    for (const char* n : names) {
      auto it = opt.find(n);
      if (it == opt.end()) continue;
      int64_t v = 0;
      if (!parse_int(it->second, v) || v < 1 || v > (1 << 20))
        throw ConfigError(source, "", std::string("launcher option ") + n + ": '" + it->second +
                                          "' is not an integer in 1..1048576 (a fixed node count is needed)");
      return v;
    }
    return std::nullopt;
  };
  if (auto n = get({"--ntasks", "-n", "-np"})) return n;
  const auto per_node = get({"--nproc-per-node", "--ntasks-per-node"});
  const auto nodes = get({"--nnodes", "--nodes", "-N"});
  if (per_node) return *per_node * nodes.value_or(1);
  return std::nullopt;
}

}  // namespace

const std::map<std::string, MegatronFlag>& megatron_flags() {
  static const std::map<std::string, MegatronFlag> flags = [] {
    std::map<std::string, MegatronFlag> out;
    std::istringstream in(detail::kMegatronFlagsTsv);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line.rfind("flag\t", 0) == 0) continue;
      const auto cells = split_tabs(line);
      if (cells.size() < 8) continue;
      MegatronFlag f;
      f.flag = cells[0];
      f.aliases = split_on(cells[1], ',');
      f.kind = cells[2];
      f.nargs = cells[3];
      f.type = cells[4];
      if (!cells[5].empty()) f.default_value = cells[5];
      f.choices = split_on(cells[6], ',');
      out[f.flag] = f;
    }
    return out;
  }();
  return flags;
}

std::vector<std::string> split_command_line(const std::string& text, const std::string& source) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  size_t line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    if (c == '\\' && i + 1 < text.size()) {
      if (text[i + 1] == '\n') {  // continuation
        ++i;
        ++line;
        continue;
      }
      if (text[i + 1] == '\r' && i + 2 < text.size() && text[i + 2] == '\n') {
        i += 2;
        ++line;
        continue;
      }
      cur += text[++i];
      in_word = true;
      continue;
    }
    if (c == '#' && !in_word) {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
      continue;
    }
    if (c == '$')
      throw ConfigError(source, strprintf("line %zu", line),
                        "unexpanded shell variable; replace '$...' by its value");
    if (c == '\'' || c == '"') {
      const size_t close = text.find(c, i + 1);
      if (close == std::string::npos)
        throw ConfigError(source, strprintf("line %zu", line), std::string("unterminated ") + c + " quote");
      const std::string quoted = text.substr(i + 1, close - i - 1);
      if (c == '"' && quoted.find('$') != std::string::npos)
        throw ConfigError(source, strprintf("line %zu", line),
                          "unexpanded shell variable; replace '$...' by its value");
      line += static_cast<size_t>(std::count(quoted.begin(), quoted.end(), '\n'));
      cur += quoted;
      in_word = true;
      i = close;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ';') {
      if (in_word) words.push_back(cur);
      cur.clear();
      in_word = false;
      continue;
    }
    cur += c;
    in_word = true;
  }
  if (in_word) words.push_back(cur);
  return words;
}

namespace {

// The flags of a command line: values per primary flag (aliases resolved, last occurrence wins as
// in argparse), in the order first given; each value checked against the flag's type and choices.
struct GivenFlags {
  std::map<std::string, std::vector<std::string>> values;
  std::vector<std::string> order;

  [[nodiscard]] bool has(const char* flag) const { return values.count(flag) > 0; }
  [[nodiscard]] const std::vector<std::string>& all(const char* flag) const { return values.at(flag); }
  [[nodiscard]] std::optional<std::string> value_of(const char* flag) const {
    auto it = values.find(flag);
    if (it == values.end() || it->second.empty()) return std::nullopt;
    return it->second.back();
  }
  [[nodiscard]] std::optional<int64_t> int_of(const char* flag) const {
    auto v = value_of(flag);
    int64_t n = 0;
    if (!v || !parse_int(*v, n)) return std::nullopt;
    return n;
  }
};

GivenFlags read_flags(const std::vector<std::string>& words, size_t start, const std::string& source) {
  // Index of option strings → primary flag.
  const auto& flags = megatron_flags();
  static const std::map<std::string, std::string> by_option = [&] {
    std::map<std::string, std::string> m;
    for (const auto& [name, f] : flags) {
      m[name] = name;
      for (const auto& a : f.aliases) m[a] = name;
    }
    return m;
  }();
  static const std::vector<std::string> all_options = [&] {
    std::vector<std::string> v;
    for (const auto& [o, _] : by_option) v.push_back(o);
    return v;
  }();

  // Values per primary flag, last occurrence wins (argparse).
  GivenFlags g;
  auto& given = g.values;
  auto& order = g.order;
  for (size_t i = start; i < words.size(); ++i) {
    std::string w = words[i], inline_value;
    bool has_inline = false;
    if (w.rfind("--", 0) != 0 && w != "-h")
      throw ConfigError(source, w, "unexpected argument (Megatron-LM flags start with '--')");
    if (const auto eq = w.find('='); eq != std::string::npos) {
      inline_value = w.substr(eq + 1);
      w.resize(eq);
      has_inline = true;
    }
    const auto it = by_option.find(w);
    if (it == by_option.end()) {
      std::string msg = "not a Megatron-LM flag (core 0.15.3–0.17.1)";
      if (std::string s = suggest(w, all_options); !s.empty()) msg += "; did you mean '" + s + "'?";
      throw ConfigError(source, w, msg);
    }
    const MegatronFlag& f = flags.at(it->second);
    std::vector<std::string> values;
    auto is_option = [](const std::string& s) { return s.rfind("--", 0) == 0; };
    if (f.kind == "flag") {
      if (has_inline) throw ConfigError(source, w, "takes no value");
    } else if (has_inline) {
      values.push_back(inline_value);
    } else if (f.kind == "value") {
      if (i + 1 >= words.size() || is_option(words[i + 1])) throw ConfigError(source, w, "needs a value");
      values.push_back(words[++i]);
    } else {  // list: nargs *, + or a count
      while (i + 1 < words.size() && !is_option(words[i + 1])) values.push_back(words[++i]);
      int64_t n = 0;
      if (f.nargs == "+" && values.empty()) throw ConfigError(source, w, "needs at least one value");
      if (parse_int(f.nargs, n) && static_cast<int64_t>(values.size()) != n)
        throw ConfigError(source, w, strprintf("needs %lld values", static_cast<long long>(n)));
    }
    for (const auto& v : values) {
      if (f.type == "int") {
        int64_t n = 0;
        if (!parse_int(v, n)) throw ConfigError(source, w, "'" + v + "' is not an integer");
      } else if (f.type == "float") {
        double d = 0;
        if (!parse_double(v, d)) throw ConfigError(source, w, "'" + v + "' is not a number");
      }
      if (!f.choices.empty() && std::find(f.choices.begin(), f.choices.end(), v) == f.choices.end()) {
        std::string msg = "'" + v + "' is not a valid choice; valid values: " + join(f.choices);
        if (std::string s = suggest(v, f.choices); !s.empty()) msg += "; did you mean '" + s + "'?";
        throw ConfigError(source, w, msg);
      }
    }
    if (!given.count(f.flag)) order.push_back(f.flag);
    given[f.flag] = values;
  }

  return g;
}

// A rule's JSON template with the flag's value in place of $v: escaped inside a string, a number
// as argparse reads it elsewhere ("052" is 52, as Megatron-LM's int() takes it).
nlohmann::json rule_json(const MegatronRule& rule, const std::string& flag, const std::vector<std::string>& values,
                         const std::string& source) {
  std::string tmpl = rule.text;
  if (const auto pos = tmpl.find("$v"); pos != std::string::npos) {
    // The value as JSON text where the template puts it: escaped inside a string, a number as
    // argparse reads it elsewhere ("052" is 52, as Megatron-LM's int() takes it).
    const std::string v = values.empty() ? std::string() : values[0];
    const bool quoted = pos > 0 && tmpl[pos - 1] == '"';
    std::string as_json = v;
    int64_t n = 0;
    double d = 0;
    if (quoted) {
      const std::string dumped = nlohmann::json(v).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      as_json = dumped.substr(1, dumped.size() - 2);
    } else if (parse_int(v, n)) {
      as_json = std::to_string(n);
    } else if (parse_double(v, d)) {
      as_json = strprintf("%.17g", d);
    }
    tmpl.replace(pos, 2, as_json);
  }
  nlohmann::json set;
  try {
    set = nlohmann::json::parse(tmpl);
  } catch (const nlohmann::json::exception&) {
    throw ConfigError(source, flag, "'" + (values.empty() ? std::string() : values[0]) +
                                        "' is not a value this flag takes (a number is expected)");
  }
  return set;
}

// Flags that map onto model or strategy keys through their rule (the flag table's templates);
// ignored and not-modeled flags are listed.
void apply_rules(const GivenFlags& g, MegatronArgs& out, const std::string& source) {
  for (const auto& flag : g.order) {
    const std::vector<std::string>& values = g.values.at(flag);
    const MegatronRule* rule = find_megatron_rule(flag, values);
    const std::string shown = flag + (values.empty() ? "" : " " + join(values, " "));
    if (!rule || rule->use == MegatronUse::Ignored) {
      out.ignored.push_back(flag);
      continue;
    }
    if (rule->use == MegatronUse::NotModeled) {
      out.not_modeled.push_back(shown + ": " + rule->text);
      continue;
    }
    if (rule->use == MegatronUse::Special) continue;
    const nlohmann::json set = rule_json(*rule, flag, values, source);
    nlohmann::json& target = rule->use == MegatronUse::Model ? out.model : out.strategy;
    for (const auto& [k, v] : set.items()) {
      target[k] = v;
      if (rule->use == MegatronUse::Model) out.model_flags[k] = shown;
    }
  }

}

// --moe-layer-freq: an int k (every k-th layer MoE) or a pattern such as ([0]*3+[1]*58):
// leading dense layers become dense_layers, anything else the model's per-layer list.
void read_moe_layer_freq(const std::string& f, MegatronArgs& out, const std::string& source) {
  int64_t k = 0, dense = -1;
  std::vector<int> pattern;
  if (parse_int(f, k)) {
    if (k == 1) dense = 0;
    if (k > 1) {
      out.model["moe_layer_freq"] = k;
      out.model_flags["moe_layer_freq"] = "--moe-layer-freq " + f;
    }
  } else {
    // Expand "[0]*3+[1]*58" / "[0,0,1,1]" into the 0/1 list.
    std::string body;
    for (char c : f)
      if (c != ' ' && c != '(' && c != ')') body += c;
    bool ok = true;
    for (const auto& term : split_on(body, '+')) {
      const auto close = term.find(']');
      if (term.empty() || term[0] != '[' || close == std::string::npos) {
        ok = false;
        break;
      }
      std::vector<int> items;
      for (const auto& x : split_on(term.substr(1, close - 1), ',')) items.push_back(x == "1" ? 1 : (x == "0" ? 0 : -1));
      int64_t times = 1;
      if (close + 1 < term.size() && (term[close + 1] != '*' || !parse_int(term.substr(close + 2), times)))
        ok = false;
      for (int64_t t = 0; ok && t < times && t < (1 << 16); ++t) pattern.insert(pattern.end(), items.begin(), items.end());
    }
    if (ok && std::find(pattern.begin(), pattern.end(), -1) == pattern.end()) {
      const auto first_moe = std::find(pattern.begin(), pattern.end(), 1);
      if (std::find(first_moe, pattern.end(), 0) == pattern.end()) dense = first_moe - pattern.begin();
      if (out.model.contains("layer_num") && static_cast<int64_t>(pattern.size()) != out.model["layer_num"].get<int64_t>())
        throw ConfigError(source, "--moe-layer-freq",
                          strprintf("the pattern has %zu entries but --num-layers is %lld", pattern.size(),
                                    static_cast<long long>(out.model["layer_num"].get<int64_t>())));
    } else {
      throw ConfigError(source, "--moe-layer-freq", "'" + f + "' is not an int or a pattern such as ([0]*3+[1]*58)");
    }
  }
  if (dense >= 0) {
    out.model["dense_layers"] = dense;
    out.model_flags["dense_layers"] = "--moe-layer-freq " + f;
  } else if (!pattern.empty()) {
    out.model["moe_layer_freq"] = pattern;
    out.model_flags["moe_layer_freq"] = "--moe-layer-freq " + f;
  } else if (k < 1) {
    throw ConfigError(source, "--moe-layer-freq", "'" + f + "' must be ≥ 1");
  }
}

// Recompute: full (uniform or block over recompute_num_layers) or selective (modules).
void read_recompute(const GivenFlags& g, MegatronArgs& out) {
  std::optional<std::string> granularity = g.value_of("--recompute-granularity");
  if (!granularity && g.has("--recompute-activations")) granularity = "selective";
  const std::string method = g.value_of("--recompute-method").value_or("uniform");
  const int64_t num = g.int_of("--recompute-num-layers").value_or(1);
  if (granularity == std::optional<std::string>("full")) {
    out.strategy["recompute_granularity"] = "full_block";
    if (method == "block") {
      out.strategy["recompute_layer_num"] = num;
    } else {
      out.recompute_all_layers = true;
      if (num > 1) out.strategy["recompute_unit_layers"] = num;
    }
  } else if (granularity == std::optional<std::string>("selective")) {
    std::vector<std::string> modules = {"core_attn"};
    if (g.has("--recompute-modules")) modules = g.all("--recompute-modules");
    out.recompute_all_layers = true;
    if (modules == std::vector<std::string>{"core_attn"}) {
      out.strategy["recompute_granularity"] = "sdp_only";
    } else {
      // core_attn with other modules: the default mode's module pass (compat mode rejects it).
      out.strategy["megatron_recompute"] = true;
      out.strategy["megatron_recompute_modules"] = modules;
    }
  }
}

// Flags whose meaning spans several keys or depends on other flags.
void apply_special_flags(const GivenFlags& g, MegatronArgs& out, const std::string& source) {
  // Attention heads: MHA unless --group-query-attention (then --num-query-groups, default 1).
  if (out.model.contains("head_num")) {
    const bool gqa = g.has("--group-query-attention");
    out.model["kv_head_num"] = gqa ? g.int_of("--num-query-groups").value_or(1) : out.model["head_num"].get<int64_t>();
    out.model_flags["kv_head_num"] = gqa ? "--group-query-attention --num-query-groups" : "--num-attention-heads";
  }
  if (auto freq = g.value_of("--moe-layer-freq")) read_moe_layer_freq(*freq, out, source);
  // Megatron: experts use --ffn-hidden-size unless --moe-ffn-hidden-size is given.
  if (out.model.contains("expert_num") && !out.model.contains("moe_ffn_hidden_size") &&
      out.model.contains("intermediate_size")) {
    out.model["moe_ffn_hidden_size"] = out.model["intermediate_size"];
    out.model_flags["moe_ffn_hidden_size"] = out.model_flags["intermediate_size"];
  }
  if (auto etp = g.int_of("--expert-tensor-parallel-size")) {
    out.strategy["etp_size"] = *etp;
    out.expert_tp_given = true;
  }
  // Megatron FSDP (--use-megatron-fsdp) shards as --data-parallel-sharding-strategy says (default
  // no_shard); the sharding strategy is the ZeRO stage, so it replaces the distributed
  // optimizer's zero_state 1. Without Megatron FSDP the sharding flag is not read.
  if (g.has("--use-megatron-fsdp")) {
    out.strategy["data_parallel_sharding_strategy"] = g.value_of("--data-parallel-sharding-strategy").value_or("no_shard");
    out.strategy.erase("zero_state");
  } else if (g.has("--data-parallel-sharding-strategy")) {
    out.ignored.push_back("--data-parallel-sharding-strategy");
  }
  out.global_batch_size = g.int_of("--global-batch-size");
  out.layers_per_virtual_stage = g.int_of("--num-layers-per-virtual-pipeline-stage");
  // A string value: set as JSON, never through the template (it may hold any character).
  if (auto l = g.value_of("--pipeline-model-parallel-layout")) out.strategy["pipeline_model_parallel_layout"] = *l;
  if (auto t = g.value_of("--cp-comm-type")) {
    // One value per layer is accepted; trainsim runs every layer with one flavour.
    out.cp_comm_type = *t;
    const auto& all = g.all("--cp-comm-type");
    if (std::any_of(all.begin(), all.end(), [&](const std::string& v) { return v != *t; }))
      out.not_modeled.push_back("--cp-comm-type " + join(all, " ") + ": a flavour per layer (simulated as " + *t + ")");
  }
  if (g.has("--hierarchical-context-parallel-sizes")) {
    std::vector<int64_t> sizes;
    for (const auto& v : g.all("--hierarchical-context-parallel-sizes")) {
      int64_t n = 0;
      (void)parse_int(v, n);  // the flag's type (int) was checked above
      sizes.push_back(n);
    }
    out.strategy["hierarchical_context_parallel_sizes"] = sizes;
  }
  if (auto d = g.value_of("--moe-token-dispatcher-type")) out.moe_dispatcher = *d;

  if (g.has("--offload-modules")) out.strategy["offload_modules"] = g.all("--offload-modules");
  if (g.has("--cuda-graph-scope")) out.strategy["cuda_graph_scope"] = g.all("--cuda-graph-scope");

  read_recompute(g, out);
}

}  // namespace

MegatronArgs parse_megatron_args(const std::string& text, const std::string& source) {
  MegatronArgs out;
  out.source = source;
  const std::vector<std::string> words = split_command_line(text, source);
  // Launcher words come before the training script (the first *.py); a file holding only the
  // Megatron flags starts with "--".
  size_t start = 0;
  const auto script = std::find_if(words.begin(), words.end(), [](const std::string& w) {
    return w.size() > 3 && w.compare(w.size() - 3, 3, ".py") == 0;
  });
  if (script != words.end()) {
    start = static_cast<size_t>(script - words.begin()) + 1;
    out.world_size = launcher_world_size({words.begin(), script}, source);
  } else if (!words.empty() && words[0].rfind("--", 0) != 0) {
    throw ConfigError(source, "", "expected a Megatron-LM command line (torchrun ... pretrain_gpt.py --num-layers ...) "
                                  "or its flags, got '" + words[0] + "'");
  }

  const GivenFlags g = read_flags(words, start, source);
  // Megatron's defaults where they differ from the strategy file's.
  out.strategy = {{"dtype", "fp32"},           {"enable_sequence_parallel", false},
                  {"zero_state", 0},
                  {"micro_batch_num", 1}};
  apply_rules(g, out, source);
  apply_special_flags(g, out, source);
  return out;
}

nlohmann::json megatron_moe_defaults(const MegatronArgs& a) {
  nlohmann::json d = {{"group_linear_mode", "serial"}, {"moe_pad_expert_input_to_capacity", false}};
  for (const auto& [k, v] : a.model.items())
    if (d.contains(k)) d[k] = v;
  return d;
}

nlohmann::json megatron_model_json(const MegatronArgs& a) {
  nlohmann::json m = a.model;
  auto get = [&](const char* k, int64_t fallback) {
    return m.contains(k) && m[k].is_number_integer() ? m[k].get<int64_t>() : fallback;
  };
  m["model_name"] = "Megatron-LM command line";
  const int64_t h = get("hidden_size", 0);
  const bool swiglu = m.value("use_swiglu", false);
  // Megatron: ffn_hidden_size defaults to 4h, or int(4h·2/3 / 64)·64 with SwiGLU.
  if (!m.contains("intermediate_size") && h > 0) m["intermediate_size"] = swiglu ? (4 * h * 2 / 3) / 64 * 64 : 4 * h;
  if (!m.contains("head_size") && h > 0 && get("head_num", 0) > 0 && m.value("attention_type", "mha") != "mla")
    m["head_size"] = h / get("head_num", 1);
  if (!m.contains("tie_word_embeddings")) m["tie_word_embeddings"] = true;
  if (!m.contains("linear_bias")) m["linear_bias"] = true;
  if (m["linear_bias"].get<bool>()) m["qkv_bias"] = true;  // the QKV linear gets a bias too
  if (!m.contains("normalization")) m["normalization"] = "LayerNorm";
  if (get("expert_num", 1) > 1) {
    m.update(megatron_moe_defaults(a));
    if (!m.contains("topk")) m["topk"] = 2;
  }
  if (m.value("attention_type", "mha") == "mla") {
    // Megatron's MLA defaults.
    if (!m.contains("kv_lora_rank")) m["kv_lora_rank"] = 32;
    if (!m.contains("qk_head_dim")) m["qk_head_dim"] = 128;
    if (!m.contains("qk_pos_emb_head_dim")) m["qk_pos_emb_head_dim"] = 64;
    if (!m.contains("v_head_dim")) m["v_head_dim"] = 128;
  }
  return m;
}

}  // namespace trainsim
