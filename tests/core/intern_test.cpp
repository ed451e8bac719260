// Interned leaf names: one copy per text across threads, and composed names spelled as before.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "inputs/strategy_config.h"
#include "core/intern.h"
#include "model/graph.h"
#include "test_presets.h"

namespace trainsim {
namespace {

std::string names(const std::vector<Leaf>& leaves) {
  std::string o;
  for (const auto& l : leaves) o.append(l.name).append(",");
  return o;
}

StrategyConfig strategy() {
  StrategyConfig s;
  s.seq_len = 4096;
  s.micro_batch_size = 1;
  s.micro_batch_num = 1;
  s.world_size = 8;
  s.ep_size = 8;
  return s;
}

TEST(Intern, EqualTextSharesStorageAcrossThreads) {
  std::vector<const char*> got(8);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&got, t] {
      for (int i = 0; i < 1000; ++i) (void)intern("filler." + std::to_string(i * 8 + static_cast<int>(t)));
      got[t] = intern(std::string("shared_expert.") + "linear_fc1").data();
    });
  for (auto& t : threads) t.join();
  for (const char* p : got) EXPECT_EQ(p, got[0]);
  EXPECT_EQ(intern("shared_expert.linear_fc1"), "shared_expert.linear_fc1");
  // Short texts (held inside the string object) keep their address as the pool grows too.
  const std::string_view seven = intern("filler.7");
  EXPECT_EQ(seven.data(), intern(std::string("filler.") + "7").data());
  EXPECT_EQ(seven, "filler.7");
}

TEST(Intern, MoeLayerWithSharedExpertNames) {
  const LayerTemplate t = build_layer(test::preset_model("deepseek-v2-lite"), strategy(), {true, false, false});
  EXPECT_EQ(names(t.leaves),
            "input_layernorm,q_proj,kv_down_proj,kv_layernorm,kv_up_proj,rotary_emb,core_attention,linear_proj,"
            "pre_mlp_layernorm,shared_expert.linear_fc1,shared_expert.swiglu,shared_expert.linear_fc2,router,"
            "permutation,experts.linear_fc1,expert_swiglu,experts.linear_fc2,unpermutation,");
}

TEST(Intern, MtpLayerNames) {
  ModelConfig m = test::preset_model("deepseek-v3");
  m.mtp_num_layers = 1;
  const Chunk c = build_chunk(m, strategy(), 129280, ChunkSpec{false, true, 1, 0, 0, 1});
  EXPECT_EQ(names(c.templates.at(static_cast<size_t>(c.layers[1].template_index))->leaves),
            "mtp.embedding,mtp.enorm,mtp.hnorm,mtp.eh_proj,input_layernorm,q_down_proj,kv_down_proj,q_layernorm,"
            "q_up_proj,kv_layernorm,kv_up_proj,rotary_emb,core_attention,linear_proj,pre_mlp_layernorm,"
            "shared_expert.linear_fc1,shared_expert.swiglu,shared_expert.linear_fc2,router,permutation,"
            "experts.linear_fc1,expert_swiglu,experts.linear_fc2,unpermutation,mtp.final_layernorm,"
            "mtp.output_layer,mtp.cross_entropy,");
  EXPECT_EQ(names(c.post), "final_layernorm,output_layer,cross_entropy,mtp.embedding_weights,");
}

TEST(Intern, Fp8LayerNames) {
  StrategyConfig s = strategy();
  s.ep_size = 1;
  s.fp8 = true;
  const LayerTemplate t = build_layer(test::preset_model("llama3-8b"), s, {false, false, false});
  EXPECT_EQ(names(t.leaves),
            "input_layernorm,linear_qkv.quantizer,linear_qkv,rotary_emb,core_attention,linear_proj.quantizer,"
            "linear_proj,pre_mlp_layernorm,linear_fc1.quantizer,linear_fc1,swiglu,linear_fc2.quantizer,"
            "linear_fc2,");
  // The quantizer names are the interned copies: one storage for the text in every layer.
  const LayerTemplate again = build_layer(test::preset_model("llama3-8b"), s, {false, false, false});
  EXPECT_EQ(t.leaves[1].name.data(), again.leaves[1].name.data());
}

}  // namespace
}  // namespace trainsim
