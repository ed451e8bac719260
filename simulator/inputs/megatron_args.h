// A Megatron-LM pretraining command line (torchrun/srun prefix, backslash continuations,
// comments) → model and strategy keys, with every flag classified as modeled, not modeled or
// ignored.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace trainsim {

/// One row of Megatron-LM's flag list (inputs/data/megatron-lm/flags.tsv).
struct MegatronFlag {
  std::string flag;                  // primary option, e.g. "--tensor-model-parallel-size"
  std::vector<std::string> aliases;  // other option strings
  std::string kind;                  // "flag", "value" or "list"
  std::string nargs, type;
  /// Megatron-LM's default as the table writes it (lists as JSON, the empty string as ""); unset: None.
  std::optional<std::string> default_value;
  std::vector<std::string> choices;
};

/// Every flag Megatron-LM 0.15.3 / 0.16.1 / 0.17.1 accepts (plus ModelOpt's), by primary name.
[[nodiscard]] const std::map<std::string, MegatronFlag>& megatron_flags();

/// Splits a shell command line into words: quotes, backslash escapes and continuations, `#`
/// comments. An unexpanded `$VAR` is a ConfigError naming `source`.
[[nodiscard]] std::vector<std::string> split_command_line(const std::string& text, const std::string& source);

struct MegatronArgs {
  std::string source;
  nlohmann::json model = nlohmann::json::object();     // model keys set by model flags
  std::map<std::string, std::string> model_flags;      // model key → the flag that set it
  nlohmann::json strategy = nlohmann::json::object();  // strategy keys (Megatron's defaults included)
  std::optional<int64_t> world_size;                   // from the launcher
  std::optional<int64_t> global_batch_size;
  std::optional<int64_t> layers_per_virtual_stage;     // --num-layers-per-virtual-pipeline-stage
  bool recompute_all_layers = false;                   // recompute_layer_num = every layer
  bool expert_tp_given = false;                        // else Megatron uses etp = tp
  std::string cp_comm_type = "p2p";                    // Megatron's default
  std::string moe_dispatcher = "allgather";            // Megatron's default
  std::vector<std::string> not_modeled;  // "--flag [value]: what is not modeled"
  std::vector<std::string> ignored;      // "--flag"
};

/// Parses a command line. A flag Megatron-LM does not know, a missing or malformed value, or a
/// value outside the flag's choices is a ConfigError with a suggestion.
[[nodiscard]] MegatronArgs parse_megatron_args(const std::string& text, const std::string& source);

/// How Megatron-LM runs a MoE model when the command line does not say (SequentialMLP experts,
/// dropless routing), as model keys; applied to a model file given with the command line too.
[[nodiscard]] nlohmann::json megatron_moe_defaults(const MegatronArgs& a);

/// The model keys of `a` plus Megatron's defaults for the rest (MHA unless GQA, ffn 4h or
/// 8h/3 rounded down to 64 with SwiGLU, LayerNorm, linear biases, tied embeddings, ...).
[[nodiscard]] nlohmann::json megatron_model_json(const MegatronArgs& a);

}  // namespace trainsim
