// Model JSON reader and writer.
#include "inputs/model_config.h"

#include <algorithm>

#include "inputs/json_reader.h"
#include "core/enum_table.h"
#include "core/text.h"

namespace trainsim {

int64_t padded_vocab_size(int64_t vocab, int64_t tp) {
  // Megatron `_vocab_size_with_padding`: make_vocab_size_divisible_by (128) × tp.
  const int64_t m = 128 * tp;
  return (vocab + m - 1) / m * m;
}

ModelConfig load_model(const std::string& text, const std::string& source) {
  nlohmann::json doc = parse_json(text, source);
  IssueList issues(source);
  ModelConfig m;
  ObjectReader r(doc, "", issues);
  std::optional<std::string> type;
  r.opt("model_type", type);
  r.opt("model_name", m.model_name);
  r.req("hidden_size", m.hidden_size);
  r.req("head_num", m.head_num);
  r.req("kv_head_num", m.kv_head_num);
  r.opt("head_size", m.head_size);
  r.opt("intermediate_size", m.intermediate_size);
  r.req("layer_num", m.layer_num);
  r.req("vocab_size", m.vocab_size);
  r.ignore("orig_vocab_size");
  r.opt("use_swiglu", m.use_swiglu);
  r.opt("expert_num", m.expert_num);
  r.opt("topk", m.topk);
  r.opt("attention_type", m.attention_type);
  r.opt("moe_ffn_hidden_size", m.moe_ffn_hidden_size);
  r.opt("moe_shared_expert_intermediate_size", m.moe_shared_expert_intermediate_size);
  r.opt("v_head_dim", m.v_head_dim);
  r.opt("qk_head_dim", m.qk_head_dim);
  r.opt("qk_pos_emb_head_dim", m.qk_pos_emb_head_dim);
  r.opt("q_lora_rank", m.q_lora_rank);
  r.opt("kv_lora_rank", m.kv_lora_rank);
  r.opt("dense_layers", m.dense_layers);
  r.opt("moe_pad_expert_input_to_capacity", m.moe_pad_expert_input_to_capacity);
  r.opt("capacity", m.capacity);
  m.capacity_given = r.has("capacity");
  r.opt("group_linear_mode", m.group_linear_mode);
  r.opt("tie_word_embeddings", m.tie_word_embeddings);
  r.opt("qkv_bias", m.qkv_bias);
  r.opt("linear_bias", m.linear_bias);
  r.opt("router_bias", m.router_bias);
  r.opt("qk_layernorm", m.qk_layernorm);
  r.opt("attention_sinks", m.attention_sinks);
  r.opt("normalization", m.normalization);
  r.opt("mtp_num_layers", m.mtp_num_layers);
  int64_t moe_freq = 1;
  if (r.has("moe_layer_freq") && doc.at("moe_layer_freq").is_array())
    r.opt("moe_layer_freq", m.moe_layer_pattern);
  else
    r.opt("moe_layer_freq", moe_freq);
  r.finish();
  m.model_type = type ? *type : (m.expert_num > 1 ? "moe" : "dense");

  // Upper bounds keep products of dimensions far from overflow (and beyond any real model).
  const struct { const char* name; int64_t v; int64_t max; } bounded[] = {
      {"hidden_size", m.hidden_size, 1 << 20}, {"head_num", m.head_num, 1 << 16},
      {"kv_head_num", m.kv_head_num, 1 << 16}, {"head_size", m.head_size.value_or(1), 1 << 16},
      {"intermediate_size", m.intermediate_size.value_or(1), 1 << 24}, {"layer_num", m.layer_num, 1 << 16},
      {"vocab_size", m.vocab_size, 1 << 26}, {"expert_num", m.expert_num, 1 << 16},
      {"moe_ffn_hidden_size", m.moe_ffn_hidden_size.value_or(1), 1 << 24},
      {"moe_shared_expert_intermediate_size", m.moe_shared_expert_intermediate_size.value_or(1), 1 << 24},
      {"v_head_dim", m.v_head_dim.value_or(1), 1 << 16}, {"qk_head_dim", m.qk_head_dim.value_or(1), 1 << 16},
      {"qk_pos_emb_head_dim", m.qk_pos_emb_head_dim.value_or(1), 1 << 16},
      {"q_lora_rank", m.q_lora_rank.value_or(1), 1 << 20}, {"kv_lora_rank", m.kv_lora_rank.value_or(1), 1 << 20}};
  for (const auto& b : bounded) {
    const bool given = doc.is_object() && doc.contains(b.name) && doc.at(b.name).is_number();
    if (b.v > b.max)
      issues.add(std::string("/") + b.name, "larger than the supported maximum " + std::to_string(b.max));
    else if (given && b.v < 1)
      issues.add(std::string("/") + b.name, "must be ≥ 1, got " + std::to_string(b.v));
  }
  if (m.capacity > 1024) issues.add("/capacity", "larger than the supported maximum 1024");
  auto check_name = [&](const char* path, const char* what, const std::string& v, std::vector<std::string> valid) {
    if (std::find(valid.begin(), valid.end(), v) == valid.end()) issues.add(path, unknown_name_message(what, v, valid));
  };
  check_name("/model_type", "model type", m.model_type, {"dense", "moe"});
  check_name("/attention_type", "attention type", m.attention_type, {"mha", "mla"});
  check_name("/group_linear_mode", "mode", m.group_linear_mode, {"parallel", "serial"});
  check_name("/normalization", "normalization", m.normalization, {"RMSNorm", "LayerNorm"});
  if (m.mtp_num_layers < 0 || m.mtp_num_layers > 64) issues.add("/mtp_num_layers", "must be in 0..64");
  if (m.head_num > 0 && m.kv_head_num > 0 && m.head_num % m.kv_head_num != 0)
    issues.add("/kv_head_num", "must divide head_num (" + std::to_string(m.head_num) + ")");
  if (!m.is_mla() && !m.head_size) issues.add("/head_size", "required for attention_type 'mha'");
  if (m.is_mla()) {
    if (!m.qk_head_dim) issues.add("/qk_head_dim", "required for attention_type 'mla'");
    if (!m.v_head_dim) issues.add("/v_head_dim", "required for attention_type 'mla'");
    if (!m.qk_pos_emb_head_dim) issues.add("/qk_pos_emb_head_dim", "required for attention_type 'mla'");
    if (!m.kv_lora_rank) issues.add("/kv_lora_rank", "required for attention_type 'mla'");
  }
  if (m.is_moe()) {
    if (m.expert_num < 2) issues.add("/expert_num", "a moe model needs expert_num ≥ 2");
    if (!m.topk || *m.topk < 1 || *m.topk > m.expert_num)
      issues.add("/topk", "a moe model needs 1 ≤ topk ≤ expert_num (" + std::to_string(m.expert_num) + ")");
    if (m.moe_ffn() < 1) issues.add("/moe_ffn_hidden_size", "required for a moe model");
    if (m.dense_layers < 0 || m.dense_layers > m.layer_num)
      issues.add("/dense_layers", "must be in 0.." + std::to_string(m.layer_num));
    if (m.capacity <= 0) issues.add("/capacity", "must be > 0");
    if (moe_freq < 1 || moe_freq > std::max<int64_t>(1, m.layer_num))
      issues.add("/moe_layer_freq", "an int must be in 1.." + std::to_string(m.layer_num));
    else if (moe_freq > 1 && m.layer_num <= (1 << 16))
      for (int64_t i = 0; i < m.layer_num; ++i)
        m.moe_layer_pattern.push_back(i >= m.dense_layers && i % moe_freq == 0 ? 1 : 0);
    const auto& pat = m.moe_layer_pattern;
    if (!pat.empty() && static_cast<int64_t>(pat.size()) != m.layer_num)
      issues.add("/moe_layer_freq", strprintf("the list has %zu entries but layer_num is %lld", pat.size(),
                                              static_cast<long long>(m.layer_num)));
    if (std::any_of(pat.begin(), pat.end(), [](int64_t v) { return v != 0 && v != 1; }))
      issues.add("/moe_layer_freq", "list entries must be 0 (dense) or 1 (MoE)");
    if (!pat.empty() && moe_freq == 1 && m.dense_layers > 0)
      issues.add("/dense_layers", "give dense_layers or a moe_layer_freq list, not both (the list says which layers are dense)");
  } else if (r.has("moe_layer_freq")) {
    issues.add("/moe_layer_freq", "changes nothing in a dense model; remove it");
  }
  const bool has_dense = !m.is_moe() || m.dense_layers > 0 ||
                         std::find(m.moe_layer_pattern.begin(), m.moe_layer_pattern.end(), 0) != m.moe_layer_pattern.end();
  if (has_dense && m.intermediate_size.value_or(0) < 1)
    issues.add("/intermediate_size", "required for dense layers");
  issues.throw_if_any();
  return m;
}

std::string model_to_json_text(const ModelConfig& m) {
  nlohmann::ordered_json j;
  j["model_type"] = m.model_type;
  if (!m.model_name.empty()) j["model_name"] = m.model_name;
  j["hidden_size"] = m.hidden_size;
  j["head_num"] = m.head_num;
  j["kv_head_num"] = m.kv_head_num;
  if (m.head_size) j["head_size"] = *m.head_size;
  if (m.intermediate_size) j["intermediate_size"] = *m.intermediate_size;
  j["layer_num"] = m.layer_num;
  j["vocab_size"] = m.vocab_size;
  j["use_swiglu"] = m.use_swiglu;
  if (m.is_moe()) {
    j["expert_num"] = m.expert_num;
    if (m.topk) j["topk"] = *m.topk;
    if (m.moe_ffn_hidden_size) j["moe_ffn_hidden_size"] = *m.moe_ffn_hidden_size;
    if (m.moe_shared_expert_intermediate_size)
      j["moe_shared_expert_intermediate_size"] = *m.moe_shared_expert_intermediate_size;
    // A layer pattern says which layers are dense itself.
    j["dense_layers"] = m.moe_layer_pattern.empty() ? m.dense_layers : 0;
    if (!m.moe_layer_pattern.empty()) j["moe_layer_freq"] = m.moe_layer_pattern;
    j["moe_pad_expert_input_to_capacity"] = m.moe_pad_expert_input_to_capacity;
    if (m.moe_pad_expert_input_to_capacity || m.capacity_given) j["capacity"] = m.capacity;
    j["group_linear_mode"] = m.group_linear_mode;
  }
  if (m.is_mla()) {
    j["attention_type"] = m.attention_type;
    if (m.qk_head_dim) j["qk_head_dim"] = *m.qk_head_dim;
    if (m.v_head_dim) j["v_head_dim"] = *m.v_head_dim;
    if (m.qk_pos_emb_head_dim) j["qk_pos_emb_head_dim"] = *m.qk_pos_emb_head_dim;
    if (m.q_lora_rank) j["q_lora_rank"] = *m.q_lora_rank;
    if (m.kv_lora_rank) j["kv_lora_rank"] = *m.kv_lora_rank;
  }
  // Parameter-count details: written only when they differ from the defaults.
  const ModelConfig d;
  if (m.tie_word_embeddings != d.tie_word_embeddings) j["tie_word_embeddings"] = m.tie_word_embeddings;
  if (m.qkv_bias != d.qkv_bias) j["qkv_bias"] = m.qkv_bias;
  if (m.linear_bias != d.linear_bias) j["linear_bias"] = m.linear_bias;
  if (m.router_bias != d.router_bias) j["router_bias"] = m.router_bias;
  if (m.qk_layernorm != d.qk_layernorm) j["qk_layernorm"] = m.qk_layernorm;
  if (m.attention_sinks != d.attention_sinks) j["attention_sinks"] = m.attention_sinks;
  if (m.normalization != d.normalization) j["normalization"] = m.normalization;
  if (m.mtp_num_layers != d.mtp_num_layers) j["mtp_num_layers"] = m.mtp_num_layers;
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

const std::vector<std::string>& model_keys() {
  static const std::vector<std::string> keys = {
      "model_type", "model_name", "hidden_size", "head_num", "kv_head_num", "head_size",
      "intermediate_size", "layer_num", "vocab_size", "orig_vocab_size", "use_swiglu",
      "expert_num", "topk", "attention_type", "moe_ffn_hidden_size",
      "moe_shared_expert_intermediate_size", "v_head_dim", "qk_head_dim", "qk_pos_emb_head_dim",
      "q_lora_rank", "kv_lora_rank", "dense_layers", "moe_pad_expert_input_to_capacity",
      "capacity", "group_linear_mode", "tie_word_embeddings", "qkv_bias", "linear_bias",
      "router_bias", "qk_layernorm", "attention_sinks", "normalization", "mtp_num_layers", "moe_layer_freq"};
  return keys;
}

}  // namespace trainsim
