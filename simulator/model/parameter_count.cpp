// Parameter counts: one formula per block, matching the weights Hugging Face checkpoints store.
#include "model/parameter_count.h"

#include <algorithm>


namespace trainsim {
namespace {

struct LayerParams {
  int64_t total = 0, active = 0;
};

int64_t norm_params(const ModelConfig& m, int64_t width) {
  return m.normalization == "LayerNorm" ? 2 * width : width;
}

int64_t attention_params(const ModelConfig& m) {
  const int64_t h = m.hidden_size, a = m.head_num;
  int64_t p = norm_params(m, h);  // input norm
  if (m.is_mla()) {
    // DeepSeek-V2/V3 MLA: q (optionally through a normed low-rank), compressed kv + rope key,
    // kv up-projection to the nope key and value heads, output projection.
    const int64_t dq = m.qk_head_dim.value_or(0), dr = m.qk_pos_emb_head_dim.value_or(0);
    const int64_t dv = m.v_head_dim.value_or(0), kvl = m.kv_lora_rank.value_or(0);
    if (m.q_lora_rank) {
      const int64_t ql = *m.q_lora_rank;
      p += h * ql + norm_params(m, ql) + ql * a * (dq + dr);
    } else {
      p += h * a * (dq + dr);
    }
    p += h * (kvl + dr) + norm_params(m, kvl) + kvl * a * (dq + dv);
    p += a * dv * h;
    if (m.linear_bias) p += h;
    return p;
  }
  const int64_t d = m.head_size.value_or(0), g = m.kv_head_num;
  p += h * (a + 2 * g) * d + a * d * h;
  if (m.qkv_bias) p += (a + 2 * g) * d;
  if (m.linear_bias) p += h;
  if (m.qk_layernorm) p += 2 * norm_params(m, d);
  if (m.attention_sinks) p += a;
  return p;
}

// One FFN of width f: fc1 (2f with SwiGLU) and fc2, with their biases.
int64_t ffn_params(const ModelConfig& m, int64_t f) {
  const int64_t h = m.hidden_size, up = m.use_swiglu ? 2 * f : f;
  int64_t p = h * up + f * h;
  if (m.linear_bias) p += up + h;
  return p;
}

LayerParams layer_params(const ModelConfig& m, bool moe) {
  const int64_t h = m.hidden_size;
  const int64_t common = attention_params(m) + norm_params(m, h);  // + pre-MLP norm
  if (!moe) {
    const int64_t p = common + ffn_params(m, m.intermediate_size.value_or(0));
    return {p, p};
  }
  const int64_t e = m.expert_num, k = m.topk.value_or(1);
  int64_t shared = h * e + (m.router_bias ? e : 0);  // router
  if (m.moe_shared_expert_intermediate_size) shared += ffn_params(m, *m.moe_shared_expert_intermediate_size);
  const int64_t expert = ffn_params(m, m.moe_ffn());
  return {common + shared + e * expert, common + shared + k * expert};
}

// DeepSeek-V3 MTP layer: enorm + hnorm, the 2h → h projection, one transformer layer and its
// final norm; embedding and output layer are shared with the main model.
LayerParams mtp_params(const ModelConfig& m) {
  const int64_t h = m.hidden_size;
  LayerParams l = layer_params(m, m.is_moe());
  const int64_t extra = 3 * norm_params(m, h) + 2 * h * h;
  return {l.total + extra, l.active + extra};
}

}  // namespace

ParameterCount count_parameters(const ModelConfig& m, const std::vector<VirtualStage>& stages, int64_t pp_size) {
  ParameterCount out;
  const int64_t h = m.hidden_size;
  out.embedding = m.vocab_size * h;
  const int64_t head = (m.tie_word_embeddings ? 0 : m.vocab_size * h) + norm_params(m, h);
  const LayerParams dense = layer_params(m, false);
  const LayerParams moe = m.is_moe() ? layer_params(m, true) : dense;
  auto layer_at = [&](int64_t i) { return m.is_moe_layer(i) ? moe : dense; };
  const LayerParams mtp = m.mtp_num_layers > 0 ? mtp_params(m) : LayerParams{};

  out.total = out.embedding + head + m.mtp_num_layers * mtp.total;
  out.active = out.embedding + head + m.mtp_num_layers * mtp.active;
  for (int64_t i = 0; i < m.layer_num; ++i) {
    out.total += layer_at(i).total;
    out.active += layer_at(i).active;
  }

  // Layers of each pipeline rank in Megatron's global order: virtual stage i = c·pp + r holds the
  // next layers and runs on rank r (pipeline_layout.h).
  if (stages.empty()) return out;
  const int64_t pp = std::max<int64_t>(1, pp_size);
  out.stages.resize(static_cast<size_t>(pp));
  int64_t next = 0;
  for (size_t i = 0; i < stages.size(); ++i) {
    const VirtualStage& vs = stages[i];
    StageParameters& st = out.stages[i % static_cast<size_t>(pp)];
    st.stage = static_cast<int64_t>(i) % pp;
    st.layers += vs.layers;
    for (int64_t j = 0; j < vs.layers; ++j, ++next) {
      st.total += layer_at(next).total;
      st.active += layer_at(next).active;
    }
    // The loss stage holds the output layer (its own copy of a tied embedding when pp > 1).
    const int64_t ends = (vs.embedding ? out.embedding : 0) +
                         (vs.loss ? head + (m.tie_word_embeddings && pp > 1 ? out.embedding : 0) : 0);
    st.total += ends + vs.mtp_layers * mtp.total;
    st.active += ends + vs.mtp_layers * mtp.active;
  }
  return out;
}

}  // namespace trainsim
