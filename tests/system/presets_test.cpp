// Every shipped preset (configs/{model,strategy,system}/*.json) loads with the strict readers,
// carries the published facts its name promises, and is embedded in the binary.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "inputs/model_config.h"
#include "inputs/model_merge.h"
#include "system/presets.h"
#include "inputs/strategy_config.h"
#include "system/system_config.h"
#include "plan/validate.h"
#include "views/predict.h"
#include "core/error.h"

namespace trainsim {
namespace {

namespace fs = std::filesystem;

struct PresetFile {
  std::string kind;  // "model", "strategy" or "system"
  std::string stem;  // preset name
  std::string path;
};

// Readable test output ("model/llama3-8b") instead of the struct's bytes.
void PrintTo(const PresetFile& p, std::ostream* os) { *os << p.kind << "/" << p.stem; }

std::string configs_dir() { return std::string(TRAINSIM_SOURCE_DIR) + "/configs"; }

std::vector<PresetFile> preset_files() {
  std::vector<PresetFile> out;
  for (const char* kind : {"model", "strategy", "system"}) {
    const fs::path dir = fs::path(configs_dir()) / kind;
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (!entry.is_regular_file() || entry.path().extension() != ".json") continue;
      out.push_back({kind, entry.path().stem().string(), entry.path().string()});
    }
  }
  std::sort(out.begin(), out.end(), [](const PresetFile& a, const PresetFile& b) {
    return a.kind != b.kind ? a.kind < b.kind : a.stem < b.stem;
  });
  return out;
}

std::string test_name(const testing::TestParamInfo<PresetFile>& info) {
  std::string name = info.param.kind + "_" + info.param.stem;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

ModelConfig load_model_file(const std::string& path) { return load_model(read_file(path), path); }
StrategyConfig load_strategy_file(const std::string& path) {
  return load_strategy(read_file(path), path);
}
SystemConfig load_system_file(const std::string& path) { return load_system(read_file(path), path); }

std::string preset_path(const std::string& kind, const std::string& stem) {
  return configs_dir() + "/" + kind + "/" + stem + ".json";
}

// Published architecture facts (model cards / config.json of each release).
struct ModelFacts {
  int64_t hidden, heads, kv_heads, layers, vocab, experts, topk;
};
const std::map<std::string, ModelFacts> kModelFacts = {
    {"llama2-7b", {4096, 32, 32, 32, 32000, 1, 0}},
    {"llama2-13b", {5120, 40, 40, 40, 32000, 1, 0}},
    {"llama2-70b", {8192, 64, 8, 80, 32000, 1, 0}},
    {"llama3-8b", {4096, 32, 8, 32, 128256, 1, 0}},
    {"llama3-70b", {8192, 64, 8, 80, 128256, 1, 0}},
    {"llama3-405b", {16384, 128, 8, 126, 128256, 1, 0}},
    {"qwen2.5-7b", {3584, 28, 4, 28, 152064, 1, 0}},
    {"qwen2.5-72b", {8192, 64, 8, 80, 152064, 1, 0}},
    {"qwen3-8b", {4096, 32, 8, 36, 151936, 1, 0}},
    {"qwen3-32b", {5120, 64, 8, 64, 151936, 1, 0}},
    {"gpt3-175b", {12288, 96, 96, 96, 51200, 1, 0}},
    {"mixtral-8x7b", {4096, 32, 8, 32, 32000, 8, 2}},
    {"mixtral-8x22b", {6144, 48, 8, 56, 32768, 8, 2}},
    {"deepseek-v2-lite", {2048, 16, 16, 27, 102400, 64, 6}},
    {"deepseek-v2", {5120, 128, 128, 60, 102400, 160, 6}},
    {"deepseek-v3", {7168, 128, 128, 61, 129280, 256, 8}},
};

class PresetTest : public testing::TestWithParam<PresetFile> {};

TEST_P(PresetTest, LoadsAndIsEmbedded) {
  const PresetFile& p = GetParam();
  try {
    if (p.kind == "model") {
      (void)load_model_file(p.path);
    } else if (p.kind == "strategy") {
      (void)load_strategy_file(p.path);
    } else {
      (void)load_system_file(p.path);
    }
  } catch (const Error& e) {
    FAIL() << e.what();
  }
  const auto names = preset_names(p.kind);
  EXPECT_EQ(std::count(names.begin(), names.end(), p.stem), 1)
      << p.kind << " preset '" << p.stem << "' must appear once in the embedded preset list";
  // The embedded copy is the file itself.
  const ConfigText embedded = resolve_config(p.kind, p.stem);
  EXPECT_EQ(embedded.text, read_file(p.path));
}

TEST_P(PresetTest, CarriesItsFacts) {
  const PresetFile& p = GetParam();
  if (p.kind == "model") {
    const ModelConfig m = load_model_file(p.path);
    auto it = kModelFacts.find(p.stem);
    ASSERT_NE(it, kModelFacts.end()) << "add the published facts of '" << p.stem << "' to kModelFacts";
    const ModelFacts& f = it->second;
    EXPECT_FALSE(m.model_name.empty());
    EXPECT_EQ(m.hidden_size, f.hidden);
    EXPECT_EQ(m.head_num, f.heads);
    EXPECT_EQ(m.kv_head_num, f.kv_heads);
    EXPECT_EQ(m.layer_num, f.layers);
    EXPECT_EQ(m.vocab_size, f.vocab);
    EXPECT_EQ(m.expert_num, f.experts);
    EXPECT_EQ(m.is_moe(), f.experts > 1);
    if (f.topk > 0) {
      EXPECT_EQ(m.topk, std::optional<int64_t>(f.topk));
    }
    return;
  }
  if (p.kind == "strategy") {
    const StrategyConfig s = load_strategy_file(p.path);
    // The name states the parallel layout: every "<dim><n>" token must match the file.
    const std::map<std::string, int64_t> dims = {
        {"tp", s.tp_size}, {"cp", s.cp_size}, {"pp", s.pp_size}, {"dp", s.dp_size()},
        {"ep", s.ep_size}, {"vpp", s.interleaving_size}, {"zero", s.zero_state}};
    const std::regex token("(^|-)(tp|cp|pp|dp|ep|vpp|zero)([0-9]+)(?=-|$)");
    int found = 0;
    for (std::sregex_iterator i(p.stem.begin(), p.stem.end(), token), end; i != end; ++i, ++found)
      EXPECT_EQ(dims.at((*i)[2]), std::stoll((*i)[3])) << "name token '" << (*i)[0] << "'";
    EXPECT_GE(found, 2) << "strategy preset names give their parallel sizes";
    EXPECT_EQ(s.world_size % (s.tp_size * s.cp_size * s.pp_size), 0);
    EXPECT_EQ(s.world_size, s.tp_size * s.cp_size * s.pp_size * s.dp_size());
    EXPECT_EQ(s.micro_batch_size, 1);
    EXPECT_EQ(s.seq_len, s.cp_size > 1 ? 16384 : 4096);
    EXPECT_EQ(s.fp8, p.stem.find("fp8") != std::string::npos);
    if (p.stem.find("full-recompute") != std::string::npos) {
      EXPECT_EQ(s.recompute_granularity, std::optional<std::string>("full_block"));
    }
    if (p.stem.find("recompute") == std::string::npos) {
      EXPECT_FALSE(s.is_recompute());
    }
    if (s.interleaving_size > 1) {
      EXPECT_FALSE(s.pp_comm_async);
    }
    // Legal with a representative model on a datasheet system.
    const bool moe = s.ep_size > 1;
    const ModelConfig m = load_model_file(preset_path("model", moe ? "mixtral-8x7b" : "llama3-8b"));
    const SystemConfig sys = load_system_file(preset_path("system", "h100-sxm-80g"));
    for (const Issue& issue : validate_plan(m, s, sys, {}))
      ADD_FAILURE() << issue.str();
    return;
  }
  const SystemConfig sys = load_system_file(p.path);
  ASSERT_TRUE(sys.ops.count("default"));
  ASSERT_TRUE(sys.bandwidths.count("default"));
  EXPECT_GT(sys.ops.at("default").peak_flops, 0);
  EXPECT_GT(sys.bandwidths.at("default").bytes_per_s, 0);
  EXPECT_GT(sys.mem_bytes, 0);
  // HGX/DGX nodes of 8 GPUs; rack-scale NVLink systems (GB200 NVL72) are 4-GPU trays in one domain.
  EXPECT_EQ(sys.num_per_node, sys.nvlink_domain_size ? 4 : 8);
  EXPECT_FALSE(sys.description.empty());
  const std::vector<std::string> groups =
      sys.intra_with_pcie
          ? std::vector<std::string>{"intra_node_pcie_2x", "intra_node_pcie_4x", "intra_node_pcie_8x", "inter_node"}
          : std::vector<std::string>{"high_intra_node", "inter_node"};
  for (const auto& g : groups) {
    ASSERT_TRUE(sys.networks.count(g)) << g;
    EXPECT_GT(sys.networks.at(g).bandwidth.bytes_per_s, 0) << g;
    for (const char* op : {"all_reduce", "all_gather", "reduce_scatter", "p2p", "all2all"})
      EXPECT_TRUE(sys.networks.at(g).ops.count(op)) << g << "/" << op;
  }
  const bool copied = p.stem.size() > 8 && p.stem.substr(p.stem.size() - 8) == "-simumax";
  const bool measured = p.stem.size() > 9 && p.stem.substr(p.stem.size() - 9) == "-measured";
  if (copied) {
    EXPECT_EQ(sys.description.rfind("SimuMax v1.2 calibrated", 0), 0u);
  } else if (measured) {
    // Imported from NVIDIA's published tables (tools/measured): the file names its source, the
    // GEMM classes carry a model of every table point (A100: 9,240; the others 35,700) naming
    // its package, and the attention shapes of the validation cases a measured efficiency.
    EXPECT_NE(sys.description.find("built by `make measured-systems` from the measurements NVIDIA publishes in "
                                   "aiconfigurator-core"),
              std::string::npos);
    const auto prov = nlohmann::json::parse(sys.provenance_json);
    EXPECT_EQ(prov["kernels"]["measurement_provenance"]["source"]["package"], "aiconfigurator-core");
    EXPECT_EQ(prov["comm_bench"]["import"]["source"]["package"], "aiconfigurator-core");
    // Every NCCL table point as the NVLink collectives' models: 21 sizes per group size 2, 4, 8
    // (GB200: 2, 4); an 8-GPU 1 MiB all-reduce is a table point.
    const bool gb200 = p.stem == "gb200-measured";
    for (const char* op : {"all_reduce", "all_gather", "reduce_scatter", "all2all"}) {
      const auto& cm = sys.networks.at("high_intra_node").ops.at(op).model;
      ASSERT_TRUE(cm) << op;
      EXPECT_EQ(cm->points(), gb200 ? 42u : 63u) << op;
      EXPECT_EQ(nlohmann::json::parse(cm->provenance_json)["import"]["source"]["package"], "aiconfigurator-core");
      EXPECT_EQ(cm->predict(1 << 20, gb200 ? 4 : 8).source, EfficiencySource::Measured) << op;
    }
    // A100, H100, H200: attention is a points model of the plans' shapes timed from the table
    // (MLA at the mean head dim); the classes keep the datasheet's fallback, which no attention
    // key takes (docs/calibration.md).
    if (p.stem == "a100-sxm-80g-measured" || p.stem == "h100-sxm-80g-measured" || p.stem == "h200-sxm-141g-measured") {
      for (const auto& [op, fallback] : std::vector<std::pair<std::string, double>>{{"sdp_fwd", 0.7}, {"sdp_bwd", 0.6}}) {
        const auto& model = sys.ops.at(op).point_model;
        ASSERT_TRUE(model) << p.stem << " " << op;
        EXPECT_EQ(model->points(), 38u) << op;
        EXPECT_EQ(sys.ops.at(op).efficient_factor, fallback) << op;
        const auto mp = nlohmann::json::parse(model->provenance_json);
        EXPECT_EQ(mp["fitted_by"], "trainsim system build --measured-system") << op;
        // An MLA key (d_qk 192, d_v 128: DeepSeek-V3's) is answered by the model.
        EXPECT_NE(model->predict(sdpa_key(1, 4096, 64, 64, 192, 128, true)).source, EfficiencySource::Default) << op;
      }
    }
    // B200: the bf16 GEMM, grouped-GEMM and attention classes are models of SimuMax's B200
    // calibration instead (docs/calibration.md, "Two measured B200 sources").
    const bool trained = p.stem == "b200-sxm-180g-measured";
    if (trained) {
      EXPECT_NE(sys.description.find("from models of the per-shape efficiencies SimuMax v1.2 b200_bf16_ceperm"),
                std::string::npos);
      for (const auto& [op, points] : std::vector<std::pair<std::string, size_t>>{
               {"matmul", 514}, {"group_matmul", 108}, {"sdp_fwd", 32}, {"sdp_bwd", 32}}) {
        const auto& model = sys.ops.at(op).point_model;
        ASSERT_TRUE(model) << op;
        EXPECT_EQ(model->points(), points) << op;
        EXPECT_TRUE(sys.ops.at(op).accurate.empty()) << op;
        const auto mp = nlohmann::json::parse(model->provenance_json);
        EXPECT_EQ(mp["sys_name"], "b200_bf16_ceperm") << op;
        EXPECT_EQ(mp["fitted_by"], "trainsim system build --measured-system") << op;
        // Attention efficiencies exceed 1 (FLOPs counted without the causal halving).
        for (const auto& [key, eff] : model->entries()) {
          EXPECT_GT(eff, 0.05) << op << " " << format_packed_key(key);
          EXPECT_LT(eff, 1.25) << op << " " << format_packed_key(key);
        }
      }
      // One by hand: the Llama 3 70B forward GEMM of SimuMax's file, measured.
      const EfficiencyAnswer a = sys.ops.at("matmul").point_model->predict(
          matmul_key(1, 4096, 8192, 10240, KeyLayout::TN, false, KeyDtype::bf16));
      EXPECT_EQ(a.source, EfficiencySource::Measured);
      EXPECT_NEAR(a.efficiency, 0.6451614102335537, 1e-15);
    }
    for (const char* op : {"matmul", "fp8_matmul"}) {
      if (trained && std::string(op) == "matmul") continue;
      const auto& model = sys.ops.at(op).gemm_model;
      ASSERT_TRUE(model) << op;
      EXPECT_EQ(model->points(), p.stem == "a100-sxm-80g-measured" ? 9240u : 35700u) << op;
      const auto mp = nlohmann::json::parse(model->provenance_json);
      EXPECT_EQ(mp["source"]["package"], "aiconfigurator-core") << op;
      EXPECT_EQ(mp["source"]["version"], "0.12.0") << op;
      EXPECT_EQ(mp["points"], model->points()) << op;
      EXPECT_TRUE(sys.ops.at(op).accurate.empty()) << op;
      if (p.stem == "h100-sxm-80g-measured") {
        const auto lines = model_summaries(sys);
        ASSERT_GE(lines.size(), 4u);
        EXPECT_EQ(lines[lines.size() - 4],
                  "matmul: GEMM model of 35,700 measured points (aiconfigurator-core 0.12.0, NVIDIA H100 80GB HBM3)");
        EXPECT_EQ(lines[lines.size() - 2],
                  "sdp_fwd: attention model of 38 measured shapes (h100_sxm context attention, attention_points.json)");
        EXPECT_EQ(lines.back(), "high_intra_node: collective models of all2all, all_gather, all_reduce, reduce_scatter "
                                "from 252 measured points (group sizes 2, 4, 8; aiconfigurator-core 0.12.0; NCCL "
                                "2.29.2; NVIDIA H100 80GB HBM3)");
      }
      // The 4096³ bf16 GEMM is in every table: measured, at a plausible efficiency.
      const GemmAnswer a = model->predict(4096, 4096, 4096);
      EXPECT_EQ(a.source, EfficiencySource::Measured) << op;
      const double eff = 2.0 * 4096 * 4096 * 4096 / (a.time_s * sys.ops.at(op).peak_flops);
      EXPECT_GT(eff, 0.3) << op;
      EXPECT_LT(eff, 1.0) << op;
    }
    for (const char* op : {"sdp_fwd", "sdp_bwd"}) {
      if (trained) continue;
      // A points model of the plans' shapes (A100, H100, H200), or per-shape entries (GB200).
      const auto& model = sys.ops.at(op).point_model;
      std::vector<std::pair<std::string, double>> entries;
      if (model)
        for (const auto& [key, eff] : model->entries()) entries.emplace_back(format_packed_key(key), eff);
      else
        for (const auto& [key, eff] : sys.ops.at(op).accurate.entries()) entries.emplace_back(key, eff);
      EXPECT_GE(entries.size(), 20u) << op;
      // Above 1 for long causal sequences: FLOPs are counted without the causal halving.
      for (const auto& [key, eff] : entries) {
        EXPECT_GT(eff, 0.05) << op << " " << key;
        EXPECT_LT(eff, 1.25) << op << " " << key;
      }
    }
  } else {
    // Datasheet presets say so, and every compute and memory class has a usable efficiency.
    EXPECT_EQ(sys.schema_version, "1.0.0");
    EXPECT_NE(sys.description.find("datasheet figures with default efficiencies, not measured"),
              std::string::npos);
    const auto prov = nlohmann::json::parse(sys.provenance_json);
    EXPECT_EQ(prov["kind"], "datasheet figures");
    EXPECT_FALSE(prov["source"].get<std::string>().empty());
    for (const char* op : {"default", "matmul", "fp8_matmul", "group_matmul", "fp8_group_matmul",
                           "sdp_fwd", "sdp_bwd"}) {
      ASSERT_TRUE(sys.ops.count(op)) << op;
      EXPECT_GT(sys.ops.at(op).efficient_factor, 0) << op;
      EXPECT_LE(sys.ops.at(op).efficient_factor, 1) << op;
    }
    for (const char* bw : {"default", "permute_fwd", "permute_bwd", "ce", "ce_fusion"})
      EXPECT_TRUE(sys.bandwidths.count(bw)) << bw;
  }
}

INSTANTIATE_TEST_SUITE_P(PresetFiles, PresetTest, testing::ValuesIn(preset_files()), test_name);

TEST(PresetFacts, EveryKindHasPresets) {
  std::map<std::string, int> count;
  for (const auto& p : preset_files()) ++count[p.kind];
  EXPECT_GE(count["model"], 16);
  EXPECT_GE(count["strategy"], 8);
  EXPECT_GE(count["system"], 7);
  // Every model with published facts ships as a file.
  for (const auto& [stem, facts] : kModelFacts)
    EXPECT_TRUE(fs::is_regular_file(preset_path("model", stem))) << stem;
}

TEST(PresetFacts, Llama3And405bShapes) {
  const ModelConfig m = load_model_file(preset_path("model", "llama3-8b"));
  EXPECT_EQ(m.hidden_size, 4096);
  EXPECT_EQ(m.layer_num, 32);
  EXPECT_EQ(m.head_size, std::optional<int64_t>(128));
  EXPECT_EQ(m.intermediate_size, std::optional<int64_t>(14336));
  EXPECT_TRUE(m.use_swiglu);
  const ModelConfig big = load_model_file(preset_path("model", "llama3-405b"));
  EXPECT_EQ(big.intermediate_size, std::optional<int64_t>(53248));
  const ModelConfig gpt = load_model_file(preset_path("model", "gpt3-175b"));
  EXPECT_FALSE(gpt.use_swiglu);  // GELU MLP
  EXPECT_EQ(gpt.intermediate_size, std::optional<int64_t>(4 * 12288));
}

TEST(PresetFacts, DeepSeekMlaMoe) {
  const ModelConfig lite = load_model_file(preset_path("model", "deepseek-v2-lite"));
  EXPECT_TRUE(lite.is_mla());
  EXPECT_FALSE(lite.q_lora_rank.has_value());  // V2-Lite projects q directly
  EXPECT_EQ(lite.kv_lora_rank, std::optional<int64_t>(512));
  EXPECT_EQ(lite.dense_layers, 1);
  const ModelConfig v3 = load_model_file(preset_path("model", "deepseek-v3"));
  EXPECT_TRUE(v3.is_mla());
  EXPECT_EQ(v3.q_lora_rank, std::optional<int64_t>(1536));
  EXPECT_EQ(v3.dense_layers, 3);
  EXPECT_EQ(v3.moe_ffn(), 2048);
  EXPECT_EQ(v3.moe_shared_expert_intermediate_size, std::optional<int64_t>(2048));
  EXPECT_EQ(v3.qk_pos_emb_head_dim, std::optional<int64_t>(64));
}

// Datasheet peaks: FLOP/s, HBM bytes/s, NVLink bytes/s per direction, node NIC bytes/s.
TEST(PresetFacts, DatasheetSystemFigures) {
  struct Row {
    const char* stem;
    double bf16, fp8, hbm, intra, nic;
  };
  const Row rows[] = {
      {"a100-sxm-80g", 312e12, 312e12, 2039e9, 300e9, 200e9},
      {"a100-pcie-80g", 312e12, 312e12, 1935e9, 31.5e9, 200e9},
      {"h100-sxm-80g", 989e12, 1979e12, 3350e9, 450e9, 400e9},
      {"h200-sxm-141g", 989e12, 1979e12, 4800e9, 450e9, 400e9},
      {"b200-sxm-180g", 2250e12, 4500e12, 8000e9, 900e9, 400e9},
      {"b300-sxm-288g", 2250e12, 4500e12, 8000e9, 900e9, 800e9},
      {"gb300-nvl72", 2500e12, 5000e12, 8000e9, 900e9, 400e9},  // NIC per 4-GPU tray
  };
  auto near = [](double got, double want) { return std::fabs(got - want) <= want * 1e-3; };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.stem);
    const SystemConfig sys = load_system_file(preset_path("system", r.stem));
    EXPECT_DOUBLE_EQ(sys.ops.at("matmul").peak_flops, r.bf16);
    EXPECT_DOUBLE_EQ(sys.ops.at("default").peak_flops, r.bf16);
    EXPECT_DOUBLE_EQ(sys.ops.at("fp8_matmul").peak_flops, r.fp8);
    EXPECT_TRUE(near(sys.bandwidths.at("default").bytes_per_s, r.hbm))
        << sys.bandwidths.at("default").bytes_per_s;
    const std::string intra = sys.intra_with_pcie ? "intra_node_pcie_8x" : "high_intra_node";
    EXPECT_TRUE(near(sys.networks.at(intra).bandwidth.bytes_per_s, r.intra));
    EXPECT_TRUE(near(sys.networks.at("inter_node").bandwidth.bytes_per_s, r.nic));
  }
  const SystemConfig h100 = load_system_file(preset_path("system", "h100-sxm-80g"));
  EXPECT_DOUBLE_EQ(h100.ops.at("matmul").peak_flops, 989e12);
  EXPECT_FALSE(h100.intra_with_pcie);
  EXPECT_TRUE(load_system_file(preset_path("system", "a100-pcie-80g")).intra_with_pcie);
  const SystemConfig h200 = load_system_file(preset_path("system", "h200-sxm-141g"));
  EXPECT_GT(h200.mem_bytes, 140 * 1024.0 * 1024 * 1024);
}

// Every system preset has its host section (datasheet link, assumed CPU Adam), so the offloading
// switches run on every preset: fine_grained_activation_offloading with offload_modules and
// offload_tensors, and optimizer_cpu_offload. Host link per GPU and direction: PCIe Gen4 x16
// 31.5 GB/s, Gen5 x16 63 GB/s, NVLink-C2C 900 GB/s for one Grace and two GPUs (225 GB/s each);
// CPU Adam = half the host DRAM bandwidth per GPU × 12/28 (12 B of state updated per 28 B moved).
TEST(PresetFacts, HostSectionAndOffloadingOnEverySystem) {
  const std::map<std::string, std::pair<double, double>> host_gb_per_s = {  // link, Adam (GB/s)
      {"a100", {31.5, 51.2 * 0.5 * 12 / 28}},  {"h100", {63, 76.8 * 0.5 * 12 / 28}},
      {"h200", {63, 76.8 * 0.5 * 12 / 28}},    {"b200", {63, 89.6 * 0.5 * 12 / 28}},
      {"gb200", {225, 256 * 0.5 * 12 / 28}},   {"b300", {126, 102.4 * 0.5 * 12 / 28}},
      {"gb300", {225, 14300.0 / 36 / 2 * 0.5 * 12 / 28}}};
  const ModelConfig dense = load_model_file(preset_path("model", "llama3-8b"));
  const ModelConfig moe = load_model_file(preset_path("model", "mixtral-8x7b"));
  int systems = 0;
  for (const auto& p : preset_files()) {
    if (p.kind != "system") continue;
    ++systems;
    SCOPED_TRACE(p.stem);
    const SystemConfig sys = load_system_file(p.path);
    const auto& want = host_gb_per_s.at(p.stem.substr(0, p.stem.find('-')));
    EXPECT_NEAR(sys.host_link_bytes_per_s / 1e9, want.first, 0.01 * want.first);
    EXPECT_NEAR(sys.host_adam_bytes_per_s / 1e9, want.second, 0.01 * want.second);
    for (const bool is_moe : {false, true}) {
      const StrategyConfig s = load_strategy(
          std::string(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 4, "world_size": 8,
              "zero_state": 1, "fine_grained_activation_offloading": true, "offload_modules": ["core_attn"],
              "offload_tensors": ["pre_mlp_layernorm_output")") +
              (is_moe ? R"(, "dispatched_input"], "ep_size": 8)" : "]") +
              R"(, "optimizer_cpu_offload": true, "optimizer_offload_fraction": 0.5})",
          "s.json");
      const auto issues = validate_plan(is_moe ? moe : dense, s, sys, {});
      for (const Issue& issue : issues) ADD_FAILURE() << issue.str();
    }
  }
  EXPECT_EQ(systems, 15);
}

// Every system preset carries every key a switch needs, so that no plan fails on a preset for a
// missing key: DeepEP beside compute (overlap_moe_expert_parallel_comm) takes its SMs out of
// accelerator.sm_count, the offloading switches use the host section. Each runs to a finite
// prediction on every preset with the switches acting (none turned off as having no effect).
// Before, gb200-nvl72 and the two SimuMax files had no sm_count and the DeepEP plan was an error.
TEST(PresetFacts, EverySwitchRunsOnEverySystem) {
  const std::vector<std::pair<std::string, std::vector<Override>>> plans = {
      {"mixtral-8x7b/ep8-pp1-dp8-moe-deepep",
       {{"overlap_moe_expert_parallel_comm", "true", "--set overlap_moe_expert_parallel_comm=true"},
        {"moe_deepep_num_sms", "24", "--set moe_deepep_num_sms=24"}}},
      {"llama3-8b/tp2-pp2-dp2-zero1",
       {{"fine_grained_activation_offloading", "true", "--set fine_grained_activation_offloading=true"},
        {"offload_modules", R"(["core_attn"])", "--set offload_modules=[\"core_attn\"]"},
        {"optimizer_cpu_offload", "true", "--set optimizer_cpu_offload=true"},
        {"optimizer_offload_fraction", "0.5", "--set optimizer_offload_fraction=0.5"}}},
  };
  int systems = 0;
  for (const auto& p : preset_files()) {
    if (p.kind != "system") continue;
    ++systems;
    const SystemConfig sys = load_system_file(p.path);
    EXPECT_TRUE(sys.sm_count.has_value()) << p.stem << ": accelerator.sm_count";
    for (const auto& [plan, sets] : plans) {
      SCOPED_TRACE(p.stem + " " + plan);
      PlanRequest r;
      r.model = resolve_config("model", plan.substr(0, plan.find('/')));
      r.strategy = resolve_config("strategy", plan.substr(plan.find('/') + 1));
      r.overrides = sets;
      try {
        const Prediction pr = predict(r, "", "", resolve_config("system", p.stem), MfuConvention::Megatron,
                                      Mode::Default);
        EXPECT_GT(pr.estimate.iteration_time_s, 0);
        for (const NoEffect& n : pr.in.no_effect) ADD_FAILURE() << "turned off: " << no_effect_line(n);
      } catch (const Error& e) {
        ADD_FAILURE() << e.what();
      }
    }
  }
  EXPECT_EQ(systems, 15);
}

// The offloading switches and every recompute module Megatron's guide lists, on every system
// preset (before, h100-sxm-80g stopped with "needs /host/link_gbps" and "/host/cpu_adam_gbps",
// and recompute_modules rejected routed_experts and the a2a_overlap_* modules). Each runs to a
// finite prediction, none is turned off as having no effect, and each acts: offloading holds
// pinned host memory and keeps fewer activations and optimizer states on the GPU; a recompute
// module re-runs a forward (recompute time) and keeps no more activations than the plan without
// it. DeepSeek-V2-Lite has every kind of layer the modules name: a dense first layer (mlp), MLA
// (mla_up_proj), shared and routed experts with grouped GEMMs (moe_act); the a2a_overlap_*
// pieces need the EP all-to-all overlap, on here.
std::vector<PresetFile> system_presets() {
  std::vector<PresetFile> out;
  for (const auto& p : preset_files())
    if (p.kind == "system") out.push_back(p);
  return out;
}

Override set(const std::string& key, const std::string& value) { return {key, value, "--set " + key + "=" + value}; }

Estimate run_plan(const PresetFile& system, const std::string& plan, const std::vector<Override>& sets) {
  PlanRequest r;
  r.model = resolve_config("model", plan.substr(0, plan.find('/')));
  r.strategy = resolve_config("strategy", plan.substr(plan.find('/') + 1));
  r.overrides = sets;
  const Prediction pr =
      predict(r, "", "", resolve_config("system", system.stem), MfuConvention::Megatron, Mode::Default);
  for (const NoEffect& n : pr.in.no_effect) ADD_FAILURE() << "turned off: " << no_effect_line(n);
  EXPECT_GT(pr.estimate.iteration_time_s, 0);
  return pr.estimate;
}

class SystemSwitchTest : public testing::TestWithParam<PresetFile> {};

TEST_P(SystemSwitchTest, OffloadingSwitchesRun) {
  const std::vector<std::pair<std::string, std::string>> plans = {
      {"llama3-8b/tp2-pp2-dp2-zero1", R"(["pre_mlp_layernorm_output"])"},
      {"mixtral-8x7b/ep8-pp1-dp8-moe", R"(["pre_mlp_layernorm_output", "dispatched_input"])"}};
  for (const auto& [plan, tensors] : plans) {
    SCOPED_TRACE(plan);
    const Estimate base = run_plan(GetParam(), plan, {});
    const Estimate off = run_plan(GetParam(), plan,
                                  {set("fine_grained_activation_offloading", "true"), set("offload_tensors", tensors),
                                   set("optimizer_cpu_offload", "true"), set("optimizer_offload_fraction", "0.5")});
    ASSERT_EQ(off.stages.size(), base.stages.size());
    for (size_t i = 0; i < off.stages.size(); ++i) {
      EXPECT_GT(off.stages[i].host_bytes, 0);
      EXPECT_LT(off.stages[i].activation_cache_per_mb_bytes, base.stages[i].activation_cache_per_mb_bytes);
      EXPECT_LT(off.stages[i].state_bytes, base.stages[i].state_bytes);
    }
  }
}

TEST_P(SystemSwitchTest, EveryRecomputeModuleRuns) {
  const std::string plan = "deepseek-v2-lite/ep8-pp1-dp8-moe-deepep";
  const Override overlap = set("overlap_moe_expert_parallel_comm", "true");
  const Estimate base = run_plan(GetParam(), plan, {overlap});
  ASSERT_EQ(base.stages.size(), 1u);
  for (const char* module : {"core_attn", "mlp", "moe", "moe_act", "shared_experts", "routed_experts", "layernorm",
                             "mla_up_proj", "a2a_overlap_attn", "a2a_overlap_post_attn", "a2a_overlap_mlp"}) {
    SCOPED_TRACE(module);
    const Estimate rc = run_plan(GetParam(), plan,
                                 {overlap, set("enable_recompute", "true"), set("recompute_granularity", "selective"),
                                  set("recompute_modules", std::string("[\"") + module + "\"]")});
    EXPECT_GT(rc.stage_times.at(0).recompute_s, 0);
    EXPECT_LE(rc.stages.at(0).activation_cache_per_mb_bytes, base.stages[0].activation_cache_per_mb_bytes);
  }
}

INSTANTIATE_TEST_SUITE_P(SystemPresets, SystemSwitchTest, testing::ValuesIn(system_presets()), test_name);

// The Blackwell Ultra presets carry their datasheet figures (HGX B300, GB300 NVL72 tables).
TEST(PresetFacts, BlackwellUltraDatasheet) {
  for (const char* name : {"b300-sxm-288g", "gb300-nvl72"}) {
    SCOPED_TRACE(name);
    const SystemConfig s = load_system_file(preset_path("system", name));
    const bool rack = std::string(name) == "gb300-nvl72";
    EXPECT_NEAR(s.mem_bytes, 288e9, 0.01e9);  // 288 GB HBM3e
    EXPECT_EQ(s.sm_count, std::optional<int64_t>(160));
    EXPECT_EQ(s.num_per_node, rack ? 4 : 8);
    EXPECT_EQ(s.nvlink_domain_size, rack ? std::optional<int64_t>(72) : std::nullopt);
  }
}

}  // namespace
}  // namespace trainsim
