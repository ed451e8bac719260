// Hugging Face config.json reader: conversion of each family and the errors users see.
#include "inputs/hf_config.h"

#include <gtest/gtest.h>

#include "system/presets.h"
#include "core/error.h"

namespace trainsim {
namespace {

HfModel load(const std::string& name, HfOptions o = {}) {
  const std::string path = std::string(TRAINSIM_TEST_DATA) + "/hf/" + name + "/config.json";
  return load_hf_config(read_file(path), path, o);
}

std::string error_of(const std::string& text) {
  try {
    (void)load_hf_config(text, "config.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(HfConfig, LlamaMatchesThePreset) {
  const ModelConfig m = load("llama-3.1-8b").model;
  const ConfigText preset = resolve_config("model", "llama3-8b");
  ModelConfig p = load_model(preset.text, preset.source);
  EXPECT_EQ(m.model_name, "llama-3.1-8b");
  EXPECT_EQ(m.hidden_size, p.hidden_size);
  EXPECT_EQ(m.head_num, p.head_num);
  EXPECT_EQ(m.kv_head_num, p.kv_head_num);
  EXPECT_EQ(m.head_size, p.head_size);
  EXPECT_EQ(m.intermediate_size, p.intermediate_size);
  EXPECT_EQ(m.layer_num, p.layer_num);
  EXPECT_EQ(m.vocab_size, p.vocab_size);
  EXPECT_TRUE(m.use_swiglu);
  EXPECT_FALSE(m.tie_word_embeddings);
}

TEST(HfConfig, FamiliesConvert) {
  const ModelConfig q3 = load("qwen3-8b").model;
  EXPECT_TRUE(q3.qk_layernorm);
  EXPECT_EQ(q3.head_size, 128);
  EXPECT_TRUE(load("qwen2.5-7b").model.qkv_bias);
  EXPECT_TRUE(load("llama-3.2-1b").model.tie_word_embeddings);

  const ModelConfig mx = load("mixtral-8x7b").model;
  EXPECT_EQ(mx.model_type, "moe");
  EXPECT_EQ(mx.expert_num, 8);
  EXPECT_EQ(mx.topk, 2);
  EXPECT_EQ(mx.moe_ffn_hidden_size, 14336);
  EXPECT_FALSE(mx.intermediate_size.has_value());

  const ModelConfig ds = load("deepseek-v3").model;
  EXPECT_EQ(ds.attention_type, "mla");
  EXPECT_EQ(ds.dense_layers, 3);
  EXPECT_EQ(ds.moe_shared_expert_intermediate_size, 2048);
  EXPECT_EQ(ds.q_lora_rank, 1536);
  EXPECT_EQ(ds.qk_head_dim, 128);
  EXPECT_EQ(ds.qk_pos_emb_head_dim, 64);
  EXPECT_EQ(ds.mtp_num_layers, 0);
  EXPECT_TRUE(ds.router_bias);
  HfOptions mtp;
  mtp.mtp = true;
  EXPECT_EQ(load("deepseek-v3", mtp).model.mtp_num_layers, 1);
  EXPECT_FALSE(load("deepseek-v2-lite").model.q_lora_rank.has_value());

  const HfModel oss = load("gpt-oss-20b");
  EXPECT_EQ(oss.model.expert_num, 32);
  EXPECT_TRUE(oss.model.attention_sinks);
  ASSERT_EQ(oss.notes.size(), 1u);
  EXPECT_EQ(oss.notes[0], "sliding-window attention (window 128) is simulated as full causal attention");
  EXPECT_EQ(load("mistral-7b").notes.size(), 1u);
  EXPECT_TRUE(load("qwen3-8b").notes.empty());
}

TEST(HfConfig, ErrorsNameTheKey) {
  const std::string base =
      R"("hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100,
         "intermediate_size": 128)";
  EXPECT_EQ(error_of("{\"model_type\": \"lama\", " + base + "}"),
            "config.json: /model_type: unknown architecture 'lama'; supported: llama, mistral, qwen2, "
            "qwen3, qwen3_moe, mixtral, deepseek_v2, deepseek_v3, gpt_oss; did you mean 'llama'?");
  EXPECT_EQ(error_of("{" + base + "}"),
            "config.json: /model_type: required string is missing; is this a Hugging Face config.json? "
            "supported: llama, mistral, qwen2, qwen3, qwen3_moe, mixtral, deepseek_v2, deepseek_v3, gpt_oss");
  EXPECT_EQ(error_of("{\"model_type\": \"llama\", \"hidden_act\": \"gelu\", " + base + "}"),
            "config.json: /hidden_act: 'gelu' is not supported; trainsim models SwiGLU (silu) MLPs");
  EXPECT_EQ(error_of("{\"model_type\": \"llama\", \"mlp_bias\": true, " + base + "}"),
            "config.json: /mlp_bias: true is not supported: biases on the MLP projections");
  EXPECT_EQ(error_of("{\"model_type\": \"llama\", \"num_hiden_layers\": 3, " + base + "}"),
            "config.json: /num_hiden_layers: unknown key; did you mean 'num_hidden_layers'?");
  // Keys that cannot change the prediction are ignored silently.
  EXPECT_EQ(error_of("{\"model_type\": \"llama\", \"bos_token_id\": 1, \"torch_dtype\": \"bfloat16\", "
                     "\"transformers_version\": \"4.0\", " + base + "}"),
            "(no error)");
}

// Qwen MoE: layer i is MoE iff (i + 1) % decoder_sparse_step == 0 and i is not in
// mlp_only_layers; DeepSeek: iff i ≥ first_k_dense_replace and i % moe_layer_freq == 0.
TEST(HfConfig, MoeLayerPatterns) {
  const std::string base =
      R"("model_type": "qwen3_moe", "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
         "vocab_size": 100, "intermediate_size": 128, "num_experts": 4, "num_experts_per_tok": 2,
         "moe_intermediate_size": 32)";
  auto model_of = [&](const std::string& extra) { return load_hf_config("{" + base + extra + "}", "config.json").model; };
  const ModelConfig leading = model_of(R"(, "mlp_only_layers": [0, 1])");
  EXPECT_EQ(leading.dense_layers, 2);
  EXPECT_TRUE(leading.moe_layer_pattern.empty());
  EXPECT_EQ(model_of(R"(, "mlp_only_layers": [3])").moe_layer_pattern, (std::vector<int64_t>{1, 1, 1, 0}));
  EXPECT_EQ(model_of(R"(, "decoder_sparse_step": 2)").moe_layer_pattern, (std::vector<int64_t>{0, 1, 0, 1}));
  EXPECT_EQ(error_of("{" + base + ", \"decoder_sparse_step\": 0}"),
            "config.json: /decoder_sparse_step: must be in 1..4");
}

}  // namespace
}  // namespace trainsim
