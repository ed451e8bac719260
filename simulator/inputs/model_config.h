// Model architecture in the SimuMax-compatible JSON format.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainsim {

struct ModelConfig {
  std::string model_type;        // "dense" or "moe" (derived from expert_num when absent)
  std::string model_name;
  int64_t hidden_size = 0;
  int64_t head_num = 0;
  int64_t kv_head_num = 0;
  std::optional<int64_t> head_size;
  std::optional<int64_t> intermediate_size;
  int64_t layer_num = 0;
  int64_t vocab_size = 0;        // as given (unpadded); padding is applied per strategy
  bool use_swiglu = false;
  int64_t expert_num = 1;
  std::optional<int64_t> topk;
  std::string attention_type = "mha";  // "mha" (MHA/GQA) or "mla"
  std::optional<int64_t> moe_ffn_hidden_size;
  std::optional<int64_t> moe_shared_expert_intermediate_size;
  std::optional<int64_t> v_head_dim, qk_head_dim, qk_pos_emb_head_dim, q_lora_rank, kv_lora_rank;
  int64_t dense_layers = 0;
  bool moe_pad_expert_input_to_capacity = true;
  double capacity = 1;
  bool capacity_given = false;  // the file sets capacity: without padding, tokens over it drop
  std::string group_linear_mode = "parallel";  // "parallel" (grouped GEMM) or "serial"
  // Details that change only the parameter count (not the step time): Hugging Face and
  // Megatron-LM spell them out, and users compare the count with theirs.
  bool tie_word_embeddings = false;   // output layer shares the embedding matrix
  bool qkv_bias = false;              // biases on the Q, K and V projections (Qwen2)
  bool linear_bias = false;           // biases on the output projection and MLP / expert linears
  bool router_bias = false;           // one bias per routed expert (DeepSeek-V3, GPT-OSS)
  bool qk_layernorm = false;          // per-head q/k norms (Qwen3)
  bool attention_sinks = false;       // one learned sink logit per head (GPT-OSS)
  std::string normalization = "RMSNorm";  // "RMSNorm" (weight) or "LayerNorm" (weight + bias)
  int64_t mtp_num_layers = 0;         // DeepSeek-V3 multi-token prediction layers
  // Megatron --moe-layer-freq as one 0/1 per layer (1 = MoE); empty: the first dense_layers
  // layers dense, the rest MoE. The JSON key moe_layer_freq takes the list or an int k (layer
  // i ≥ dense_layers is MoE iff i % k == 0, as DeepSeek's configs).
  std::vector<int64_t> moe_layer_pattern;

  bool operator==(const ModelConfig&) const = default;

  [[nodiscard]] bool is_moe() const { return model_type == "moe"; }
  [[nodiscard]] bool is_mla() const { return attention_type == "mla"; }
  /// Layer i (0-based) of a MoE model holds experts.
  [[nodiscard]] bool is_moe_layer(int64_t i) const {
    if (!is_moe()) return false;
    if (moe_layer_pattern.empty()) return i >= dense_layers;
    return moe_layer_pattern[static_cast<size_t>(i)] == 1;
  }
  /// MoE layers among layers [first, first + n).
  [[nodiscard]] int64_t moe_layers_in(int64_t first, int64_t n) const {
    int64_t k = 0;
    for (int64_t i = first; i < first + n; ++i) k += is_moe_layer(i) ? 1 : 0;
    return k;
  }
  /// Expert FFN size (falls back to the dense intermediate size, as the peer does).
  [[nodiscard]] int64_t moe_ffn() const {
    return moe_ffn_hidden_size ? *moe_ffn_hidden_size : intermediate_size.value_or(0);
  }
};

/// Parses a model JSON document; throws ConfigError listing every problem.
[[nodiscard]] ModelConfig load_model(const std::string& text, const std::string& source);
[[nodiscard]] std::string model_to_json_text(const ModelConfig& m);

/// Every key a model JSON document may hold.
[[nodiscard]] const std::vector<std::string>& model_keys();

/// Megatron vocabulary padding: ceil(V / (128·tp))·128·tp.
[[nodiscard]] int64_t padded_vocab_size(int64_t vocab, int64_t tp);

}  // namespace trainsim
