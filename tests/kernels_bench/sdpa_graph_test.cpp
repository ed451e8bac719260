// The cudnn-frontend SDPA graphs: tensors registered once, GQA shapes, data types, layouts.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/error.h"
#include "sdpa_graph.h"

namespace trainsim::kb {
namespace {

SdpaShape llama70b_tp8() {
  SdpaShape s;  // 64/8 heads over TP 8 -> 8 query heads, 1 kv head
  s.batch = 1;
  s.seq_len = 4096;
  s.head_num = 8;
  s.kv_head_num = 1;
  s.qk_head_dim = 128;
  s.v_head_dim = 128;
  return s;
}

TEST(KbSdpaGraphTest, ForwardIsBf16IoWithFp32StatsAndCausalMask) {
  SdpaGraph g = sdpa_graph(llama70b_tp8(), false);
  EXPECT_EQ(g.io_dtype, "bf16");  // P enters P.V in bf16, as TE's graphs
  EXPECT_EQ(g.intermediate_dtype, "fp32");
  EXPECT_TRUE(g.causal);
  EXPECT_TRUE(g.generate_stats);
  EXPECT_FLOAT_EQ(g.attn_scale, 1.0f / std::sqrt(128.0f));
  EXPECT_EQ(g.tensors.size(), 5u);
  EXPECT_EQ(g.at("K").dims, (std::vector<int64_t>{1, 1, 4096, 128}));
  // sbhd storage: batch stride h*d, head stride d, sequence stride b*h*d.
  EXPECT_EQ(g.at("Q").strides, (std::vector<int64_t>{1024, 128, 1024, 1}));
  EXPECT_EQ(g.at("Stats").dtype, "fp32");
  EXPECT_EQ(g.at("Stats").dims, (std::vector<int64_t>{1, 8, 4096, 1}));
  EXPECT_TRUE(g.at("O").output);
  EXPECT_EQ(SdpaGraph::buffer_bytes(g.at("Q")), 4096u * 1024u * 2u);
}

TEST(KbSdpaGraphTest, BackwardRegistersEachTensorOnceAndKeepsKvHeadsForGradients) {
  SdpaShape s = llama70b_tp8();
  s.batch = 2;
  s.qkv_contiguous = false;
  SdpaGraph g = sdpa_graph(s, true);
  std::set<std::string> names;
  std::set<int64_t> uids;
  for (const auto& t : g.tensors) {
    EXPECT_TRUE(names.insert(t.name).second) << t.name;
    EXPECT_TRUE(uids.insert(t.uid).second) << t.name;
  }
  EXPECT_EQ(names, (std::set<std::string>{"Q", "K", "V", "O", "Stats", "dO", "dQ", "dK", "dV"}));
  // GQA: dK/dV have the kv heads (the frontend reduces over the 8 query heads), dQ is bf16
  // (fp32 accumulation happens inside cudnn-frontend's workspace).
  EXPECT_EQ(g.at("dK").dims, (std::vector<int64_t>{2, 1, 4096, 128}));
  EXPECT_EQ(g.at("dQ").dtype, "bf16");
  EXPECT_TRUE(g.at("dV").output);
  EXPECT_FALSE(g.at("Stats").output);
  // Strided view of [s, 2b, h, d]: sequence stride doubles for the inputs only.
  EXPECT_EQ(g.at("K").strides, (std::vector<int64_t>{128, 128, 512, 1}));
  EXPECT_EQ(g.at("dK").strides, (std::vector<int64_t>{128, 128, 256, 1}));
  s.kv_head_num = 3;
  EXPECT_THROW((void)sdpa_graph(s, true), Error);
}

}  // namespace
}  // namespace trainsim::kb
