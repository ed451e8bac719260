// Hugging Face config reader: one key table per architecture family.
#include "inputs/hf_config.h"

#include <algorithm>
#include <filesystem>

#include "inputs/json_reader.h"
#include "core/text.h"

namespace trainsim {
namespace {

enum class Family { Llama, Qwen2, Qwen3, Qwen3Moe, Mixtral, DeepSeek, GptOss };

struct Arch {
  const char* model_type;
  Family family;
};
const Arch kArchs[] = {
    {"llama", Family::Llama},       {"mistral", Family::Llama},         {"qwen2", Family::Qwen2},
    {"qwen3", Family::Qwen3},       {"qwen3_moe", Family::Qwen3Moe},    {"mixtral", Family::Mixtral},
    {"deepseek_v2", Family::DeepSeek}, {"deepseek_v3", Family::DeepSeek}, {"gpt_oss", Family::GptOss},
};

// Keys that cannot change time, memory or the parameter count.
const char* const kIgnored[] = {
    "architectures", "transformers_version", "torch_dtype", "dtype", "bos_token_id", "eos_token_id",
    "pad_token_id", "initializer_range", "rms_norm_eps", "rope_theta", "rope_scaling",
    "rope_parameters", "max_position_embeddings", "use_cache", "attention_dropout", "pretraining_tp",
    "_name_or_path", "auto_map", "quantization_config", "output_router_logits",
    "router_aux_loss_coef", "aux_loss_alpha", "seq_aux", "norm_topk_prob", "routed_scaling_factor",
    "n_group", "topk_group", "scoring_func", "ep_size", "router_jitter_noise", "swiglu_limit",
    "initial_context_length", "max_window_layers", "embd_pdrop", "resid_pdrop", "hidden_dropout",
    "attention_probs_dropout_prob", "output_attentions", "output_hidden_states", "return_dict",
    "use_return_dict", "is_decoder", "tokenizer_class", "max_length"};

std::string model_name_from(const std::string& source) {
  std::filesystem::path p(source);
  if (p.filename() == "config.json" && p.has_parent_path()) {
    std::string dir = p.parent_path().filename().string();
    if (!dir.empty() && dir != ".") return dir;
  }
  return source.empty() || source[0] == '<' ? "" : p.stem().string();  // "<stdin>": no name
}

// One config being read: the reader, the model it fills and where notes and issues go.
struct HfRead {
  const nlohmann::json& doc;
  ObjectReader& r;
  IssueList& issues;
  HfModel& out;
  Family fam;
  const HfOptions& options;
  ModelConfig& m() { return out.model; }

  void require_false(const char* key, const char* why) {
    bool v = false;
    r.opt(key, v);
    if (v) issues.add(std::string("/") + key, std::string("true is not supported: ") + why);
  }

  // Sliding-window attention: accepted, simulated as full causal attention.
  void sliding_window() {
    bool use = fam != Family::Qwen2 && fam != Family::Qwen3 && fam != Family::Qwen3Moe;
    r.opt("use_sliding_window", use);
    std::optional<int64_t> window;
    r.opt("sliding_window", window);
    std::vector<std::string> layer_types;
    r.opt("layer_types", layer_types);
    const bool any_sliding =
        std::find(layer_types.begin(), layer_types.end(), "sliding_attention") != layer_types.end();
    if ((use && window) || any_sliding)
      out.notes.push_back(strprintf("sliding-window attention (window %lld) is simulated as full causal attention",
                                    static_cast<long long>(window.value_or(0))));
  }

  // Experts, top-k and the expert FFN width under the family's key names.
  void experts(const char* count_key, const char* ffn_key) {
    r.req(count_key, m().expert_num);
    int64_t topk = 0;
    r.req("num_experts_per_tok", topk);
    m().topk = topk;
    if (ffn_key) {
      int64_t ffn = 0;
      r.req(ffn_key, ffn);
      m().moe_ffn_hidden_size = ffn;
    } else {  // the family names the expert FFN intermediate_size
      m().moe_ffn_hidden_size = m().intermediate_size;
      m().intermediate_size.reset();
    }
  }

  void common();
  void qwen3_moe_layers();
  void deepseek();
  void gpt_oss();
};

void HfRead::common() {
  ModelConfig& mc = m();
  r.ignore("model_type");
  for (const char* k : kIgnored) r.ignore(k);
  r.req("hidden_size", mc.hidden_size);
  r.req("num_hidden_layers", mc.layer_num);
  r.req("num_attention_heads", mc.head_num);
  r.req("vocab_size", mc.vocab_size);
  mc.kv_head_num = mc.head_num;
  r.opt("num_key_value_heads", mc.kv_head_num);
  r.opt("tie_word_embeddings", mc.tie_word_embeddings);
  r.opt("intermediate_size", mc.intermediate_size);
  if (mc.head_num > 0) mc.head_size = mc.hidden_size / mc.head_num;
  r.opt("head_dim", mc.head_size);
  // The MLP is SwiGLU in every supported family; another activation changes the math.
  std::string act = "silu";
  r.opt("hidden_act", act);
  mc.use_swiglu = true;
  if (act != "silu" && act != "swiglu")
    issues.add("/hidden_act", "'" + act + "' is not supported; trainsim models SwiGLU (silu) MLPs");
}

// Qwen3-MoE: layer i is MoE iff (i + 1) % decoder_sparse_step == 0 and i is not in
// mlp_only_layers; leading dense layers stay a count, other patterns a per-layer list.
void HfRead::qwen3_moe_layers() {
  ModelConfig& mc = m();
  int64_t step = 1;
  r.opt("decoder_sparse_step", step);
  std::vector<int64_t> dense;
  if (r.has("mlp_only_layers")) {
    const auto& j = doc.at("mlp_only_layers");
    if (!j.is_array()) issues.add("/mlp_only_layers", "expected an array of layer indices");
    for (const auto& v : j.is_array() ? j : nlohmann::json::array())
      if (v.is_number_integer()) dense.push_back(v.get<int64_t>());
  }
  r.ignore("mlp_only_layers");
  if (step < 1 || step > std::max<int64_t>(1, mc.layer_num)) {
    issues.add("/decoder_sparse_step", "must be in 1.." + std::to_string(mc.layer_num));
    return;
  }
  std::sort(dense.begin(), dense.end());
  bool leading = step == 1;
  for (size_t i = 0; leading && i < dense.size(); ++i) leading = dense[i] == static_cast<int64_t>(i);
  if (leading) {
    mc.dense_layers = static_cast<int64_t>(dense.size());
    return;
  }
  for (int64_t i = 0; i < mc.layer_num && mc.layer_num <= (1 << 16); ++i)
    mc.moe_layer_pattern.push_back(!std::binary_search(dense.begin(), dense.end(), i) && (i + 1) % step == 0 ? 1 : 0);
}

void HfRead::deepseek() {
  ModelConfig& mc = m();
  mc.attention_type = "mla";
  mc.kv_head_num = mc.head_num;
  mc.head_size.reset();
  require_false("attention_bias", "biases on the attention projections");
  r.opt("q_lora_rank", mc.q_lora_rank);
  r.opt("kv_lora_rank", mc.kv_lora_rank);
  r.opt("qk_nope_head_dim", mc.qk_head_dim);
  r.opt("qk_rope_head_dim", mc.qk_pos_emb_head_dim);
  r.opt("v_head_dim", mc.v_head_dim);
  experts("n_routed_experts", "moe_intermediate_size");
  int64_t shared = 0, freq = 1, mtp = 0;
  r.opt("n_shared_experts", shared);
  if (shared > 0) mc.moe_shared_expert_intermediate_size = shared * mc.moe_ffn_hidden_size.value_or(0);
  r.opt("first_k_dense_replace", mc.dense_layers);
  r.opt("moe_layer_freq", freq);
  // DeepSeek: layer i is MoE iff i ≥ first_k_dense_replace and i % moe_layer_freq == 0.
  if (freq < 1 || freq > std::max<int64_t>(1, mc.layer_num))
    issues.add("/moe_layer_freq", "must be in 1.." + std::to_string(mc.layer_num));
  else if (freq > 1 && mc.layer_num <= (1 << 16))
    for (int64_t i = 0; i < mc.layer_num; ++i)
      mc.moe_layer_pattern.push_back(i >= mc.dense_layers && i % freq == 0 ? 1 : 0);
  if (!mc.moe_layer_pattern.empty()) mc.dense_layers = 0;  // the pattern says which are dense
  // noaux_tc routing (DeepSeek-V3) learns one score-correction bias per expert.
  std::string topk_method = "greedy";
  r.opt("topk_method", topk_method);
  mc.router_bias = topk_method == "noaux_tc";
  r.opt("num_nextn_predict_layers", mtp);
  if (options.mtp) mc.mtp_num_layers = mtp;
  r.ignore("head_dim");
}

void HfRead::gpt_oss() {
  ModelConfig& mc = m();
  experts("num_local_experts", nullptr);
  r.ignore("experts_per_token");  // older spelling of num_experts_per_tok
  bool bias = true;
  r.opt("attention_bias", bias);
  mc.qkv_bias = mc.linear_bias = bias;
  mc.router_bias = true;
  mc.attention_sinks = true;
  sliding_window();
}

// The architecture named by /model_type, or a ConfigError listing the supported ones.
const Arch& find_arch(const nlohmann::json& doc, const std::string& source) {
  if (!doc.contains("model_type") || !doc.at("model_type").is_string())
    throw ConfigError(source, "/model_type",
                      "required string is missing; is this a Hugging Face config.json? supported: " +
                          join(hf_model_types()));
  const std::string type = doc.at("model_type").get<std::string>();
  for (const auto& a : kArchs)
    if (type == a.model_type) return a;
  std::string msg = "unknown architecture '" + type + "'; supported: " + join(hf_model_types());
  if (std::string s = suggest(type, hf_model_types()); !s.empty()) msg += "; did you mean '" + s + "'?";
  throw ConfigError(source, "/model_type", msg);
}

}  // namespace


const std::vector<std::string>& hf_model_types() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& a : kArchs) out.emplace_back(a.model_type);
    return out;
  }();
  return names;
}

std::string hf_config_path(const std::string& arg) {
  std::error_code ec;
  if (std::filesystem::is_directory(arg, ec)) return (std::filesystem::path(arg) / "config.json").string();
  return arg;
}

HfModel load_hf_config(const std::string& text, const std::string& source, const HfOptions& options) {
  const nlohmann::json doc = parse_json(text, source);
  IssueList issues(source);
  if (!doc.is_object()) {
    issues.add("/", "expected an object (a Hugging Face config.json)");
    issues.throw_if_any();
  }
  const Family fam = find_arch(doc, source).family;
  HfModel out;
  ModelConfig& m = out.model;
  m.model_name = model_name_from(source);
  ObjectReader r(doc, "", issues);
  HfRead read{doc, r, issues, out, fam, options};
  read.common();
  switch (fam) {
    case Family::Llama:
      read.require_false("attention_bias", "biases on the attention projections");
      read.require_false("mlp_bias", "biases on the MLP projections");
      read.sliding_window();
      break;
    case Family::Qwen2:
      m.qkv_bias = true;
      read.sliding_window();
      break;
    case Family::Qwen3:
    case Family::Qwen3Moe:
      m.qk_layernorm = true;
      read.require_false("attention_bias", "biases on the attention projections");
      read.sliding_window();
      if (fam == Family::Qwen3) break;
      read.experts("num_experts", "moe_intermediate_size");
      read.qwen3_moe_layers();
      break;
    case Family::Mixtral:
      read.experts("num_local_experts", nullptr);
      read.sliding_window();
      break;
    case Family::DeepSeek:
      read.deepseek();
      break;
    case Family::GptOss:
      read.gpt_oss();
      break;
  }
  m.model_type = m.expert_num > 1 ? "moe" : "dense";
  r.finish();
  issues.throw_if_any();
  // The simulator's own rules (divisibility, required MLA fields, ...) on the result.
  const std::string text_out = model_to_json_text(m);
  out.model = load_model(text_out, source + " (converted)");
  return out;
}

}  // namespace trainsim
