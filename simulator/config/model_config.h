// Model architecture in the SimuMax-compatible JSON format.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

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
  std::string group_linear_mode = "parallel";  // "parallel" (grouped GEMM) or "serial"

  bool operator==(const ModelConfig&) const = default;

  [[nodiscard]] bool is_moe() const { return model_type == "moe"; }
  [[nodiscard]] bool is_mla() const { return attention_type == "mla"; }
  /// Expert FFN size (falls back to the dense intermediate size, as the peer does).
  [[nodiscard]] int64_t moe_ffn() const {
    return moe_ffn_hidden_size ? *moe_ffn_hidden_size : intermediate_size.value_or(0);
  }
};

/// Parses a model JSON document; throws ConfigError listing every problem.
[[nodiscard]] ModelConfig load_model(const std::string& text, const std::string& source);
[[nodiscard]] std::string model_to_json_text(const ModelConfig& m);

/// Megatron vocabulary padding: ceil(V / (128·tp))·128·tp.
[[nodiscard]] int64_t padded_vocab_size(int64_t vocab, int64_t tp);

}  // namespace trainsim
