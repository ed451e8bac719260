// Packed shape keys: the text they print is the key text the tables and views have always used,
// tables loaded from JSON hold them, and the estimate looks them up and reports its misses.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "test_estimate.h"
#include "compute/cost.h"
#include "system/presets.h"
#include "calibration/shape_key.h"
#include "estimate/estimate.h"
#include "model/graph.h"

namespace trainsim {
namespace {

const std::string kTn = "b=1, m=4096, k=4096, n=6144, layout=TN, accumulate=False, out_dtype=bf16";
const std::string kGrouped =
    "ng=40, M=1638, N=2816, K=2048, dtype=fp8, out_dtype=bf16, main_grad_dtype=fp32, stage=bwd_grad_w, "
    "grad=True, accumulate=True, use_split_accumulator=True, single_output=False";
const std::string kSdpa =
    "batch=1, seq_len=4096, head_num=32, kv_head_num=8, qk_head_dim=128, v_head_dim=128, qkv_contiguous=True";

TEST(PackedKeyTest, RoundTripsEachKind) {
  for (const std::string& text : {kTn, kGrouped, kSdpa}) {
    const auto key = pack_shape_key(text);
    ASSERT_TRUE(key.has_value()) << text;
    EXPECT_EQ(format_packed_key(*key), text);
  }
  EXPECT_EQ(*pack_shape_key(kTn), matmul_key(1, 4096, 4096, 6144, KeyLayout::TN, false, KeyDtype::bf16));
  EXPECT_EQ(*pack_shape_key(kGrouped), grouped_key(40, 1638, 2816, 2048, KeyDtype::fp8, KeyDtype::bf16,
                                                   KeyDtype::fp32, KeyStage::bwd_grad_w, true, true, true, false));
  EXPECT_EQ(*pack_shape_key(kSdpa), sdpa_key(1, 4096, 32, 8, 128, 128, true));
  EXPECT_EQ(format_packed_key(PackedKey{}), "");
}

TEST(PackedKeyTest, PrintsValuesAsTheKeyTextDid) {
  // Non-integral values print as printf %.0f (round half to even); zero, negative and huge
  // values print as they are, though no measured table holds them.
  const PackedKey k = matmul_key(2.5, 3.5, 0, -7, KeyLayout::NT, true, KeyDtype::fp32);
  EXPECT_EQ(format_packed_key(k), "b=2, m=4, k=0, n=-7, layout=NT, accumulate=True, out_dtype=fp32");
  EXPECT_EQ(format_packed_key(sdpa_key(-0.0, -0.25, 1e16, 1638.4, 1.5, 9007199254740993.0, false)),
            "batch=0, seq_len=-0, head_num=10000000000000000, kv_head_num=1638, qk_head_dim=2, "
            "v_head_dim=9007199254740992, qkv_contiguous=False");
  // The packed form of a printed text is the key that prints it.
  EXPECT_EQ(*pack_shape_key(format_packed_key(k)), k);
  const PackedKey neg = sdpa_key(1, -0.25, 1, 1, 1, 1, true);
  EXPECT_EQ(*pack_shape_key(format_packed_key(neg)), neg);
}

TEST(PackedKeyTest, EqualTextsAreEqualKeysWithEqualHashes) {
  const PackedKey a = matmul_key(1, 2.5, 4096, 6144, KeyLayout::TN, false, KeyDtype::bf16);
  const PackedKey b = matmul_key(1, 2, 4096, 6144, KeyLayout::TN, false, KeyDtype::bf16);
  EXPECT_EQ(format_packed_key(a), format_packed_key(b));
  EXPECT_EQ(a, b);
  EXPECT_EQ(PackedKeyHash{}(a), PackedKeyHash{}(b));
  EXPECT_EQ(PackedKeyHash{}(*pack_shape_key(kSdpa)), PackedKeyHash{}(sdpa_key(1, 4096, 32, 8, 128, 128, true)));
  EXPECT_FALSE(a == matmul_key(1, 2, 4096, 6144, KeyLayout::NN, false, KeyDtype::bf16));
  EXPECT_FALSE(sdpa_key(1, 0, 1, 1, 1, 1, true) == sdpa_key(1, -0.25, 1, 1, 1, 1, true));  // "0" vs "-0"
}

TEST(PackedKeyTest, TextsNoKeyPrintsDoNotPack) {
  for (const std::string& text :
       {std::string("b=1, m=04096, k=4096, n=6144, layout=TN, accumulate=False, out_dtype=bf16"),
        std::string("b=1, m=4096.5, k=4096, n=6144, layout=TN, accumulate=False, out_dtype=bf16"),
        std::string("b=1, m=4096, k=4096, n=6144, layout=TT, accumulate=False, out_dtype=bf16"),
        std::string("b=1, m=4096, k=4096, n=6144, layout=TN, accumulate=false, out_dtype=bf16"),
        std::string("b=1, m=4096, k=4096, n=6144, layout=TN, accumulate=False"),
        std::string("b=1,m=4096, k=4096, n=6144, layout=TN, accumulate=False, out_dtype=bf16"), std::string("k"),
        std::string("")})
    EXPECT_FALSE(pack_shape_key(text).has_value()) << text;
}

SystemConfig system_with_table(const std::string& entries) {
  return load_system(R"({"sys_name": "t", "num_per_node": 8, "accelerator": {"backend": "cuda", "mem_gbs": 80,
      "op": {"default": {"tflops": 100, "efficient_factor": 0.5},
             "matmul": {"tflops": 100, "efficient_factor": 0.5, "accurate_efficient_factor": {)" + entries +
                         R"(}}},
      "bandwidth": {"default": {"gbps": 1000, "efficient_factor": 1, "latency_us": 0}}},
      "networks": {}})",
                     "t.json");
}

TEST(PackedKeyTest, TableFromJsonIsHitByAGraphBuiltKey) {
  const ConfigText mt = resolve_config("model", "llama3-8b");
  const ModelConfig m = load_model(mt.text, mt.source);
  const StrategyConfig s = load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1,
      "micro_batch_num": 4, "world_size": 8, "tp_size": 1, "pp_size": 1})", "inline");
  ChunkSpec spec;
  spec.layers = 1;
  const Chunk chunk = build_chunk(m, s, 128256, spec);
  const Leaf& qkv = chunk.templates[0]->leaves[1];
  ASSERT_EQ(qkv.name, "linear_qkv");
  const Kernel& k = qkv.kernels[kFwd][0];
  EXPECT_EQ(format_packed_key(k.key), kTn);

  // A key no packed key prints is kept as written (and written back), never hit.
  const SystemConfig sys = system_with_table("\"" + kTn + "\": 0.75, \"m=04\": 0.5");
  const EfficiencyTable& table = sys.ops.at("matmul").accurate;
  ASSERT_NE(table.find(k.key), nullptr);
  EXPECT_EQ(*table.find(k.key), 0.75);
  EXPECT_EQ(table.at("m=04"), 0.5);
  EXPECT_EQ(table.size(), 2u);
  const std::vector<std::pair<std::string, double>> expected = {{kTn, 0.75}, {"m=04", 0.5}};
  EXPECT_EQ(table.entries(), expected);

  ClassTable classes(sys);
  EfficiencyLog log;
  const KernelCost c = kernel_cost(classes, k, &log);
  EXPECT_TRUE(c.measured);
  EXPECT_EQ(c.efficiency, 0.75);
  EXPECT_EQ(log.hits, 1);
  EXPECT_TRUE(log.misses.empty());
}

TEST(PackedKeyTest, EstimateReportsMissesAsKeyText) {
  const ConfigText mt = resolve_config("model", "llama3-8b");
  const ConfigText st = resolve_config("strategy", "tp1-pp1-dp8-zero1");
  const ConfigText yt = resolve_config("system", "h100-sxm-80g");
  const Estimate e = estimate(load_model(mt.text, mt.source), load_strategy(st.text, st.source),
                              load_system(yt.text, yt.source));
  ASSERT_EQ(e.misses.size(), 17u);
  EXPECT_EQ(e.misses[0].op, OpClass::Matmul);
  EXPECT_EQ(format_packed_key(e.misses[0].key), "b=1, m=4096, k=4096, n=128256, layout=TN, accumulate=False, out_dtype=bf16");
  EXPECT_EQ(format_packed_key(e.misses[2].key), "b=1, m=128256, k=4096, n=4096, layout=NT, accumulate=True, out_dtype=fp32");
  EXPECT_EQ(format_packed_key(e.misses[3].key), kTn);
  EXPECT_EQ(e.misses[6].op, OpClass::SdpFwd);
  EXPECT_EQ(format_packed_key(e.misses[6].key), kSdpa);
  EXPECT_EQ(e.misses[7].op, OpClass::SdpBwd);
  EXPECT_EQ(format_packed_key(e.misses[7].key), kSdpa);
  EXPECT_EQ(format_packed_key(e.misses[16].key), "b=1, m=4096, k=4096, n=14336, layout=NT, accumulate=True, out_dtype=fp32");
}

// The packed fields of each kind, byte for byte: numbers as the text prints them, the choices'
// enum values and the flags' bits in key order, every other byte zero.
TEST(PackedKeyTest, PacksFieldsInKeyOrder) {
  auto bytes = [](const PackedKey& k) {
    std::array<unsigned char, sizeof(PackedKey)> b{};
    std::memcpy(b.data(), &k, sizeof k);
    return b;
  };
  PackedKey m;
  m.kind = KeyKind::Matmul;
  m.num[0] = 1, m.num[1] = 2, m.num[2] = 4096, m.num[3] = 0;  // 2.5 rounds to even, -0 packs as 0
  m.choice[0] = 2, m.choice[1] = 2;                            // NT, fp32
  m.flags = 1;
  const PackedKey got = matmul_key(1, 2.5, 4096, -0.0, KeyLayout::NT, true, KeyDtype::fp32);
  EXPECT_EQ(bytes(got), bytes(m));
  EXPECT_FALSE(std::signbit(got.num[3]));

  PackedKey g;
  g.kind = KeyKind::Grouped;
  g.num[0] = 40, g.num[1] = 1638, g.num[2] = 2816, g.num[3] = 2048;
  g.choice[0] = 3, g.choice[1] = 0, g.choice[2] = 2, g.choice[3] = 1;  // fp8, bf16, fp32, bwd_grad_act
  g.flags = 0b1010;                                                    // accumulate, single_output
  EXPECT_EQ(bytes(grouped_key(40, 1638.4, 2816, 2048, KeyDtype::fp8, KeyDtype::bf16, KeyDtype::fp32,
                              KeyStage::bwd_grad_act, false, true, false, true)),
            bytes(g));

  PackedKey a;
  a.kind = KeyKind::Sdpa;
  a.num[0] = 1, a.num[1] = 4096, a.num[2] = 32, a.num[3] = 8, a.num[4] = 128, a.num[5] = -4;  // -3.5 to even
  const PackedKey sd = sdpa_key(1, 4096, 32, 8, 128, -3.5, false);
  EXPECT_EQ(bytes(sd), bytes(a));
  const PackedKey nan = sdpa_key(1, 4096, 32, 8, 128, -std::numeric_limits<double>::quiet_NaN(), true);
  EXPECT_TRUE(std::isnan(nan.num[5]) && std::signbit(nan.num[5]));
  EXPECT_EQ(nan.flags, 1);
}

}  // namespace
}  // namespace trainsim
