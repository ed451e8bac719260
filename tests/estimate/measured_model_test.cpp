// The measured presets' models answer every kernel of their op classes in the validation plans:
// no matmul or fp8_matmul kernel takes the op default, and most shapes are not measured points
// (the model interpolates them); on H100 the same for grouped GEMM, on B200 for grouped GEMM and
// attention. The presets are
// committed: no published-table package needed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "test_estimate.h"
#include "comm/collective.h"
#include "inputs/model_config.h"
#include "inputs/plan_request.h"
#include "system/presets.h"
#include "inputs/strategy_config.h"
#include "system/system_config.h"
#include "estimate/estimate.h"
#include "estimate/shapes.h"

namespace trainsim {
namespace {

namespace fs = std::filesystem;

// The last line of a validation table's system.txt (its system preset).
std::string table_system(const fs::path& table) {
  std::ifstream in(table / "system.txt");
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#') last = line;
  return last;
}

// The model or strategy of a validation case (files or a Megatron command line).
void load_case(const fs::path& dir, ModelConfig& model, StrategyConfig& strategy) {
  const fs::path args = dir / "megatron_args.txt";
  if (fs::is_regular_file(args)) {
    PlanRequest req;
    req.megatron = ConfigText{read_file(args.string()), args.string()};
    if (fs::is_regular_file(dir / "config.json"))
      req.hf_config = ConfigText{read_file((dir / "config.json").string()), "config.json"};
    PlanConfigs pc = build_plan(req, "", "");
    model = std::move(pc.model);
    strategy = std::move(pc.strategy);
  } else {
    const std::string mp = (dir / "model.json").string(), sp = (dir / "strategy.json").string();
    model = load_model(read_file(mp), mp);
    strategy = load_strategy(read_file(sp), sp);
  }
}

// How the collectives were timed: the default plan's NVLink collectives (TP 2 and DP 2 on one
// node) from the measured preset's curves and none from the formula there, all from the formula
// on the datasheet preset; the pipeline's p2p (no measured curve) from the formula on both.
TEST(MeasuredModelTest, CollectivesSayHowTheyWereTimed) {
  const ConfigText mt = resolve_config("model", "llama3-8b"), st = resolve_config("strategy", "tp2-pp2-dp2-zero1");
  const ModelConfig model = load_model(mt.text, mt.source);
  const StrategyConfig strategy = load_strategy(st.text, st.source);
  for (const std::string name : {"h100-sxm-80g", "h100-sxm-80g-measured"}) {
    const ConfigText sy = resolve_config("system", name);
    const SystemConfig sys = load_system(sy.text, sy.source);
    const Estimate e = estimate(model, strategy, sys, nullptr, Mode::Default, false);
    const bool measured = name.ends_with("-measured");
    for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter}) {
      const auto& n = e.collectives_by_kind[static_cast<size_t>(c)];
      const int64_t by_model = n[1] + n[2] + n[3];
      EXPECT_GT(by_model + n[0], 0) << name << " " << collective_name(c);
      EXPECT_EQ(measured ? n[0] : by_model, 0) << name << " " << collective_name(c);
    }
    const auto& p2p = e.collectives_by_kind[static_cast<size_t>(Collective::P2P)];
    EXPECT_GT(p2p[0], 0) << name;
    EXPECT_EQ(p2p[1] + p2p[2] + p2p[3], 0) << name;
  }
}

// The B200 measured preset: every op class with a model (bf16 GEMM, grouped GEMM and attention
// from SimuMax's training measurements, fp8 GEMM and fp8 grouped GEMM from the published tables)
// answers every kernel of the B200 plans.
TEST(MeasuredModelTest, B200PlansNeverTakeTheDefaultOfAModelledClass) {
  const ConfigText st = resolve_config("system", "b200-sxm-180g-measured");
  const SystemConfig sys = load_system(st.text, st.source);
  for (const char* op : {"matmul", "fp8_matmul", "group_matmul", "fp8_group_matmul", "sdp_fwd", "sdp_bwd"})
    EXPECT_TRUE(sys.ops.at(op).gemm_model || sys.ops.at(op).point_model || sys.ops.at(op).grouped_model) << op;
  int cases = 0;
  int64_t measured = 0, modelled = 0;
  for (const char* table : {"b200_megatron", "megatron_bridge_2509_b200"}) {
    for (const auto& c : fs::directory_iterator(fs::path(TRAINSIM_SOURCE_DIR) / "validation" / table / "cases")) {
      ModelConfig model;
      StrategyConfig strategy;
      load_case(c.path(), model, strategy);
      const Estimate e = estimate(model, strategy, sys, nullptr, Mode::Default, false);
      ++cases;
      for (const auto& m : e.misses) {
        const ComputeOpConfig& op = sys.ops.known_at(op_index(m.op));
        EXPECT_FALSE(op.gemm_model || op.point_model || op.grouped_model)
            << c.path().filename() << ": " << op_name(m.op) << " " << format_packed_key(m.key);
      }
      measured += e.efficiency_hits;
      modelled += e.efficiency_interpolated + e.efficiency_extrapolated;
    }
  }
  EXPECT_EQ(cases, 26);
  EXPECT_GT(measured, 0);
  EXPECT_GT(modelled, 0);
}

TEST(MeasuredModelTest, ValidationPlansGemmsAndAttentionNeverTakeTheOpDefault) {
  int cases = 0;
  int64_t measured = 0, interpolated = 0, extrapolated = 0;
  for (const auto& table : fs::directory_iterator(fs::path(TRAINSIM_SOURCE_DIR) / "validation")) {
    if (!fs::is_directory(table.path() / "cases")) continue;
    const std::string base = table_system(table.path());
    if (base != "h100-sxm-80g" && base != "a100-sxm-80g") continue;
    const ConfigText st = resolve_config("system", base + "-measured");
    const SystemConfig sys = load_system(st.text, st.source);
    for (const auto& c : fs::directory_iterator(table.path() / "cases")) {
      // A case: model and strategy files, or a Megatron command line (with an optional config.json).
      ModelConfig model;
      StrategyConfig strategy;
      load_case(c.path(), model, strategy);
      const Estimate e = estimate(model, strategy, sys, nullptr, Mode::Default, false);
      ++cases;
      for (const auto& m : e.misses) {
        EXPECT_NE(op_row(m.op).family, OpFamily::Gemm)
            << c.path().filename() << ": " << op_name(m.op) << " " << format_packed_key(m.key);
        EXPECT_NE(op_row(m.op).family, OpFamily::Attention)
            << c.path().filename() << ": " << op_name(m.op) << " " << format_packed_key(m.key);
        // H100's grouped GEMMs have the fused-MoE tables' model (A100's have none).
        if (base == "h100-sxm-80g") {
          EXPECT_NE(op_row(m.op).family, OpFamily::GroupedGemm) << c.path().filename();
        }
      }
      // The same per class: no default answer of a class with a model on both GPUs.
      for (OpClass cls : {OpClass::Matmul, OpClass::Fp8Matmul, OpClass::SdpFwd, OpClass::SdpBwd})
        EXPECT_EQ(e.efficiency_by_class[op_index(cls)][static_cast<size_t>(EfficiencySource::Default)], 0)
            << c.path().filename() << ": " << op_name(cls);
      // The per-class counts add up to the totals.
      int64_t sums[4] = {};
      for (const auto& per : e.efficiency_by_class)
        for (size_t s = 0; s < 4; ++s) sums[s] += per[s];
      EXPECT_EQ(sums[static_cast<size_t>(EfficiencySource::Measured)], e.efficiency_hits) << c.path().filename();
      EXPECT_EQ(sums[static_cast<size_t>(EfficiencySource::Interpolated)], e.efficiency_interpolated);
      EXPECT_EQ(sums[static_cast<size_t>(EfficiencySource::Extrapolated)], e.efficiency_extrapolated);
      EXPECT_GE(sums[static_cast<size_t>(EfficiencySource::Default)], static_cast<int64_t>(e.misses.size()));
      // `trainsim shapes --system` counts the GEMM shapes as known.
      for (const ShapeUse& u : list_shapes(resolve_plan(model, strategy, sys, Mode::Default)))
        if (u.op == "matmul" || u.op == "fp8_matmul") {
          EXPECT_TRUE(u.in_system) << c.path().filename() << ": " << u.key;
        }
      measured += e.efficiency_hits;
      interpolated += e.efficiency_interpolated;
      extrapolated += e.efficiency_extrapolated;
    }
  }
  EXPECT_EQ(cases, 29);  // korthikanti2022 5, narayanan2021 10, nemo2407_h100 9, megatron_bridge_2509_h100 5
  EXPECT_GT(interpolated, 0);
  EXPECT_GT(measured, 0);
  std::printf("lookups: %lld measured, %lld interpolated, %lld extrapolated\n", static_cast<long long>(measured),
              static_cast<long long>(interpolated), static_cast<long long>(extrapolated));
}

}  // namespace
}  // namespace trainsim
