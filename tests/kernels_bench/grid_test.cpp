// kernels_bench --grid: the grid's items, counts and run-time estimate, and a synthetic grid run
// with known answers (efficiencies analytic in the shape) through merge_kernels (what `trainsim
// system build --kernels` does), the system file written and read back, and the fitted models
// evaluated at shapes the grid does not hold.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "calibration/kernel_grid.h"
#include "calibration/kernels_file.h"
#include "calibration/kernels_merge.h"
#include "calibration/op_class.h"
#include "core/error.h"
#include "core/text.h"
#include "plan.h"
#include "system/presets.h"
#include "system/system_config.h"

namespace trainsim::kb {
namespace {

GridSpec all_grid() { return parse_grid_spec("all", "bf16,fp8"); }

BenchPlan grid_plan(const GridSpec& g) {
  ShapesDoc shapes;
  shapes.shapes = grid_compute_shapes(g);
  PlanOptions o;  // an H100 SXM: 989 / 1979 TFLOPS, 3.35 TB/s, 50 MiB L2
  o.memory = g.memory;
  o.grid_memory = g.memory;
  return make_plan(shapes, o);
}

TEST(KernelsGridTest, ParsesFamiliesAndDtypes) {
  const GridSpec g = parse_grid_spec("gemm,memory", "fp8");
  EXPECT_TRUE(g.gemm && g.memory && g.fp8);
  EXPECT_FALSE(g.grouped || g.attention || g.bf16);
  try {
    (void)parse_grid_spec("gemm,conv", "bf16");
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--grid 'gemm,conv': unknown family 'conv'; valid values: gemm, grouped, attention, memory, "
                           "all (comma-separated)");
  }
  EXPECT_THROW((void)parse_grid_spec("all", "fp16"), UsageError);
}

// Counts per family: GEMM 13 m × 11 n × 11 k per dtype; grouped 20 series (Mixtral's two expert
// shapes at 4 and 8 experts per rank, four more at 4, 8, 16, 32) × 9 token counts × 2 GEMMs per
// dtype; attention 3 heads × (2 head dims × 3 GQA ratios + MLA's 1) × 6 sequences per direction;
// memory 5 copies + 3 token counts × 6 cases, the empty kernel and 2 launch floors.
TEST(KernelsGridTest, ItemCountsAndRunTimeFitHalfAnHourOnAnH100) {
  const BenchPlan plan = grid_plan(all_grid());
  std::map<std::string, int> per_op;
  for (const auto& it : plan.items) ++per_op[it.op];
  EXPECT_EQ(per_op["matmul"], 13 * 11 * 11);
  EXPECT_EQ(per_op["fp8_matmul"], 13 * 11 * 11);
  EXPECT_EQ(grid_series().size(), 20u);
  EXPECT_EQ(per_op["group_matmul"], 20 * 9 * 2);
  EXPECT_EQ(per_op["fp8_group_matmul"], 20 * 9 * 2);
  EXPECT_EQ(per_op["sdp_fwd"], 3 * 7 * 6);
  EXPECT_EQ(per_op["sdp_bwd"], 3 * 7 * 6);
  EXPECT_EQ(per_op["default"], 5);
  EXPECT_EQ(per_op["permute_fwd"] + per_op["permute_bwd"] + per_op["ce_fusion"], 18);
  EXPECT_EQ(per_op["eager_launch_floor"] + per_op["graph_launch_floor"] + per_op["launch_latency"], 3);
  EXPECT_EQ(plan.items.size(), 4144u);
  EXPECT_LE(plan.est_total_s, 30 * 60);
  EXPECT_GT(plan.est_total_s, 20 * 60);  // the estimate counts every item (26 min)
  // Axes: m 1 … 64 Ki, n and k 256 … 32 Ki, every item's id distinct (resume keys on it).
  std::set<std::string> ids;
  for (const auto& it : plan.items) ids.insert(it.id());
  EXPECT_EQ(ids.size(), plan.items.size());
  EXPECT_EQ(plan.items.front().key, "b=1, m=1, k=256, n=256, layout=TN, accumulate=False, out_dtype=bf16");
  PlanOptions summary;
  summary.item_lines = false;
  const std::string text = format_plan(plan, summary);
  EXPECT_NE(text.find("  gemm        3146 items    15m15s\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("cublas"), std::string::npos);
}

TEST(KernelsGridTest, DescriptionNamesEveryAxis) {
  const auto d = nlohmann::json::parse(grid_description_json(all_grid()));
  EXPECT_EQ(d["families"], nlohmann::json({"gemm", "grouped", "attention", "memory"}));
  EXPECT_EQ(d["gemm"]["m"].size(), 13u);
  EXPECT_EQ(d["gemm"]["m"].back(), 65536);
  EXPECT_EQ(d["gemm"]["k"].back(), 32768);
  EXPECT_EQ(d["grouped"]["series"].size(), 20u);
  EXPECT_EQ(d["grouped"]["tokens"].size(), 9u);
  EXPECT_EQ(d["attention"]["mask"], "causal");
}

// Known answers. GEMM efficiency e = 0.5 (m/64Ki)^0.2 (n/32Ki)^0.1 (k/32Ki)^0.1: log time per
// padded row is linear in log m, n, k, which the model interpolates exactly; grouped pair
// efficiency 0.6 (M/8Ki)^0.3 along the tokens; attention 0.55 forward, 0.45 backward; copies at
// 85 % of the device bandwidth, the MoE permutations at 70 %, cross-entropy 60 %, above an
// eager launch floor of 4 µs per kernel (1.5 µs replayed from a graph).
// The system file keeps model times to 5 significant digits (system_writer.cpp): the exact
// answers come back to within that rounding.
constexpr double kFilePrecision = 5e-5;
constexpr double kPeak = 989e12, kPeakFp8 = 1979e12, kMem = 3.35e12, kEager = 4e-6, kGraph = 1.5e-6;

double gemm_eff(double m, double n, double k) {
  return 0.5 * std::pow(m / 65536, 0.2) * std::pow(n / 32768, 0.1) * std::pow(k / 32768, 0.1);
}
// A saturating efficiency, x / (x + a) per axis: log of it is not linear in log x, so the model's
// interpolation errs; on a cell of log width h the error of linear interpolation is at most
// h²/8 · max |d²/du² log(e^u / (e^u + a))| = h²/8 · 1/4 per axis.
double gemm_eff_saturating(double m, double n, double k) {
  return 0.8 * m / (m + 300) * n / (n + 700) * k / (k + 500);
}
using GemmEff = double (*)(double, double, double);
double grouped_eff(double tokens) { return 0.6 * std::pow(tokens / 8192, 0.3); }

KernelResult timed(const BenchItem& it, double seconds) {
  KernelResult r;
  r.kind = it.kind;
  r.op = it.op;
  r.key = it.key;
  r.flops = it.flops;
  r.bytes = it.bytes;
  r.launches = it.launches;
  r.time.n = 20;
  r.time.median = r.time.p10 = r.time.p90 = r.time.min = r.time.max = r.time.mean = seconds;
  return r;
}

double synthetic_seconds(const BenchItem& it, GemmEff eff_of) {
  const double peak = is_fp8_op(it.op) ? kPeakFp8 : kPeak;
  if (it.family == Family::Gemm) {
    const auto& s = std::get<MatmulShape>(*it.shape);
    return it.flops / (peak * eff_of(static_cast<double>(s.m), static_cast<double>(s.n), static_cast<double>(s.k)));
  }
  if (it.family == Family::GroupedGemm)
    return it.flops / (peak * grouped_eff(static_cast<double>(std::get<GroupedMatmulShape>(*it.shape).m)));
  if (it.family == Family::SdpaFwd) return it.flops / (kPeak * 0.55);
  if (it.family == Family::SdpaBwd) return it.flops / (kPeak * 0.45);
  if (it.op == "eager_launch_floor") return kEager;
  if (it.op == "graph_launch_floor" || it.op == "launch_latency") return kGraph;
  const double eff = it.op == "default" ? 0.85 : it.op == "ce_fusion" ? 0.6 : 0.7;
  return it.bytes / (kMem * eff) + kEager * it.launches;
}

// A plan's shape measured besides the grid (--shapes): the data-gradient layout, off the grid.
const char* kPlanKey = "b=1, m=4096, k=6144, n=4096, layout=NN, accumulate=False, out_dtype=bf16";

// A grid run's document on the synthetic H100, its results still to add.
KernelsDoc synthetic_doc(const GridSpec& g) {
  KernelsDoc doc;
  doc.device.name = "Synthetic H100";
  doc.device.peak_bf16_flops = kPeak;
  doc.device.peak_fp8_flops = kPeakFp8;
  doc.device.peak_mem_bytes_per_s = kMem;
  nlohmann::json prov = {{"tool", "kernels_bench"}, {"version", "test"}, {"command", "kernels_bench --grid all"}};
  prov["grid"] = nlohmann::json::parse(grid_description_json(g));
  doc.provenance_json = prov.dump();
  return doc;
}

std::string synthetic_grid_run(GemmEff eff_of = gemm_eff) {
  const GridSpec g = all_grid();
  KernelsDoc doc = synthetic_doc(g);
  for (const BenchItem& it : grid_plan(g).items) doc.results.push_back(timed(it, synthetic_seconds(it, eff_of)));
  BenchItem plan_shape;
  plan_shape.kind = "compute";
  plan_shape.op = "matmul";
  plan_shape.key = kPlanKey;
  plan_shape.flops = 2.0 * 4096 * 4096 * 6144;
  doc.results.push_back(timed(plan_shape, plan_shape.flops / (kPeak * 0.7)));
  return kernels_to_json_text(doc);
}

// The built system: merged, written as the system file, read back.
SystemConfig built_system(GemmEff eff_of = gemm_eff) {
  const ConfigText base = resolve_config("system", "h100-sxm-80g");
  SystemConfig sys = load_system(base.text, base.source);
  merge_kernels(sys, synthetic_grid_run(eff_of), "grid.json");
  return load_system(system_to_json_text(sys), "built.json");
}

TEST(KernelsGridTest, SyntheticGridGivesTheKnownAnswersAtHeldOutShapes) {
  const SystemConfig sys = built_system();
  for (const char* op : {"matmul", "fp8_matmul"}) {
    const ComputeOpConfig& c = sys.ops.at(op);
    ASSERT_TRUE(c.gemm_model) << op;
    EXPECT_EQ(c.gemm_model->points(), 1573u);
    // The plan's shape stays a measured entry (looked up first); the grid's are the model's.
    EXPECT_EQ(c.accurate.size(), is_fp8_op(op) ? 0u : 1u);
    if (!is_fp8_op(op)) {
      EXPECT_NEAR(c.accurate.at(kPlanKey), 0.7 * kPeak / c.peak_flops, 1e-12);
    }
    const double peak = is_fp8_op(op) ? kPeakFp8 : kPeak;
    // Off-grid in every axis (m a multiple of the 32-row tile), inside the grid.
    for (const auto& [m, n, k] : {std::tuple{384.0, 1536.0, 5120.0}, {3072.0, 7168.0, 14336.0},
                                  {24576.0, 2560.0, 10240.0}, {96.0, 28672.0, 768.0}}) {
      const GemmAnswer a = c.gemm_model->predict(m, n, k);
      EXPECT_EQ(a.source, EfficiencySource::Interpolated);
      const double want = 2 * m * n * k / (peak * gemm_eff(m, n, k));
      EXPECT_NEAR(a.time_s / want, 1.0, kFilePrecision) << op << " " << m << " " << n << " " << k;
    }
  }
  for (const char* op : {"group_matmul", "fp8_group_matmul"}) {
    const ComputeOpConfig& c = sys.ops.at(op);
    ASSERT_TRUE(c.grouped_model) << op;
    EXPECT_EQ(c.grouped_model->series().size(), 20u);
    const double peak = is_fp8_op(op) ? kPeakFp8 : kPeak;
    // DeepSeek-V3's down projection on 16 experts at 700 tokens each: between measured counts.
    const GroupedAnswer a = c.grouped_model->predict(700, 16, 7168, 2048);
    EXPECT_EQ(a.source, EfficiencySource::Interpolated);
    EXPECT_NEAR(a.s_per_flop * peak * grouped_eff(700), 1.0, kFilePrecision) << op;
  }
  // Attention: efficiency against the preset's peak, the same at a shape not in the grid, to the
  // fitted kernel structure's approximation of a constant efficiency (compute/attention_model.h:
  // its fixed and per-wave terms do not scale with the work; 0.12 % here) under the nearest
  // points' residuals.
  for (const auto& [op, eff] : {std::pair{"sdp_fwd", 0.55}, std::pair{"sdp_bwd", 0.45}}) {
    const ComputeOpConfig& c = sys.ops.at(op);
    ASSERT_TRUE(c.point_model) << op;
    EXPECT_EQ(c.point_model->points(), 126u);
    const EfficiencyAnswer a = c.point_model->predict(sdpa_key(1, 6144, 40, 8, 128, 128, true));
    EXPECT_EQ(a.source, EfficiencySource::Interpolated);
    EXPECT_NEAR(a.efficiency / (eff * kPeak / c.peak_flops), 1.0, 2e-3) << op;
  }
  // Memory-bound classes: the bandwidth shares and the launch floors.
  EXPECT_NEAR(sys.bandwidths.at("default").efficient_factor, 0.85, 1e-9);
  EXPECT_NEAR(sys.bandwidths.at("permute_fwd").efficient_factor, 0.7, 1e-9);
  EXPECT_NEAR(sys.bandwidths.at("ce_fusion").efficient_factor, 0.6, 1e-9);
  EXPECT_DOUBLE_EQ(sys.bandwidths.at("default").latency_s, kEager);
  EXPECT_DOUBLE_EQ(*sys.bandwidths.at("default").graph_latency_s, kGraph);
}

// A grid series three times slower per FLOP than a smaller expert shape of its expert count is
// set aside, as for the published tables (compute/grouped_screen.h: more than 1.5x at >= 256 tokens).
TEST(KernelsGridTest, AGroupedSeriesSlowerThanASmallerShapeIsSetAside) {
  const GridSpec g = all_grid();
  const nlohmann::json series = nlohmann::json::parse(grid_description_json(g))["grouped"]["series"];
  double e = 0, h = 0, i = 0;
  for (const auto& s : series)
    for (const auto& o : series)
      if (e == 0 && o["experts"] == s["experts"] && o["hidden"] <= s["hidden"] && o["inter"] <= s["inter"] &&
          (o["hidden"] != s["hidden"] || o["inter"] != s["inter"])) {
        e = s["experts"].get<double>();
        h = s["hidden"].get<double>();
        i = s["inter"].get<double>();
      }
  ASSERT_GT(e, 0) << "the grid has two expert shapes of one expert count, one smaller";
  KernelsDoc doc = synthetic_doc(g);
  for (const BenchItem& it : grid_plan(g).items) {
    double t = synthetic_seconds(it, gemm_eff);
    if (it.family == Family::GroupedGemm) {
      const auto& sh = std::get<GroupedMatmulShape>(*it.shape);
      const auto n = static_cast<double>(sh.n), k = static_cast<double>(sh.k);
      if (static_cast<double>(sh.ng) == e && ((n == 2 * i && k == h) || (n == h && k == i))) t *= 3;
    }
    doc.results.push_back(timed(it, t));
  }
  const ConfigText base = resolve_config("system", "h100-sxm-80g");
  SystemConfig sys = load_system(base.text, base.source);
  merge_kernels(sys, kernels_to_json_text(doc), "grid.json");
  for (const char* op : {"group_matmul", "fp8_group_matmul"}) {
    const GroupedModel& m = *sys.ops.at(op).grouped_model;
    EXPECT_EQ(m.series().size(), 19u) << op;
    const nlohmann::json p = nlohmann::json::parse(m.provenance_json);
    ASSERT_EQ(p["series_set_aside"].size(), 1u) << op;
    EXPECT_EQ(p["series_set_aside"][0]["hidden"], h);
    EXPECT_EQ(p["series_set_aside"][0]["inter"], i);
    EXPECT_EQ(p["series_set_aside"][0]["throughput_ratio"], 3.0);
  }
}

// The saturating efficiency at the centre of cells (the worst place for linear interpolation):
// the error stays within the bound of each axis's cell width, and is not zero.
TEST(KernelsGridTest, SaturatingEfficiencyWithinTheInterpolationBound) {
  const SystemConfig sys = built_system(gemm_eff_saturating);
  const GemmModel& model = *sys.ops.at("matmul").gemm_model;
  const auto& ms = model.m_axis();
  const auto& ns = model.n_axis();
  double worst = 0;
  for (size_t i = 2; i + 1 < ms.size(); ++i)  // m ≥ 64: cells whose rows are whole 32-row tiles
    for (size_t j = 0; j + 1 < ns.size(); j += 3)
      for (size_t l = 1; l + 1 < ns.size(); l += 3) {
        const double m = std::round(std::sqrt(ms[i] * ms[i + 1]) / 32) * 32;
        const double n = std::sqrt(ns[j] * ns[j + 1]), k = std::sqrt(ns[l] * ns[l + 1]);
        const double hm = std::log(ms[i + 1] / ms[i]), hn = std::log(ns[j + 1] / ns[j]), hk = std::log(ns[l + 1] / ns[l]);
        const double bound = (hm * hm + hn * hn + hk * hk) / 32;
        const double want = 2 * m * n * k / (kPeak * gemm_eff_saturating(m, n, k));
        const double err = std::fabs(std::log(model.predict(m, n, k).time_s / want));
        EXPECT_LE(err, bound + kFilePrecision) << m << " " << n << " " << k;
        worst = std::max(worst, err);
      }
  // The function is not log-linear: the model errs, at most 4.26 % (log of the time ratio), within
  // the bound of each cell.
  EXPECT_NEAR(worst, 0.0426, 0.0005);
}

// A run cut by its budget: the GEMM rows measured so far (m 1 and 16) still make a model; a
// grouped class with one GEMM of a pair keeps it as a per-shape entry.
TEST(KernelsGridTest, ARunCutByItsBudgetStillBuilds) {
  const GridSpec g = all_grid();
  KernelsDoc doc;
  doc.device.name = "Synthetic H100";
  doc.device.peak_bf16_flops = kPeak;
  doc.device.peak_fp8_flops = kPeakFp8;
  nlohmann::json prov = {{"tool", "kernels_bench"}, {"grid", nlohmann::json::parse(grid_description_json(g))}};
  doc.provenance_json = prov.dump();
  bool grouped_taken = false;
  for (const BenchItem& it : grid_plan(g).items) {
    const bool row = it.op == "matmul" && std::get<MatmulShape>(*it.shape).m <= 16;
    const bool first_grouped = it.op == "group_matmul" && !grouped_taken;
    if (!row && !first_grouped) continue;
    grouped_taken = grouped_taken || first_grouped;
    doc.results.push_back(timed(it, synthetic_seconds(it, gemm_eff)));
  }
  const ConfigText base = resolve_config("system", "h100-sxm-80g");
  SystemConfig sys = load_system(base.text, base.source);
  merge_kernels(sys, kernels_to_json_text(doc), "cut.json");
  ASSERT_TRUE(sys.ops.at("matmul").gemm_model);
  EXPECT_EQ(sys.ops.at("matmul").gemm_model->points(), 2u * 11 * 11);
  const ComputeOpConfig& grouped = sys.ops.at("group_matmul");
  EXPECT_FALSE(grouped.grouped_model);
  EXPECT_EQ(grouped.accurate.size(), 1u);
  const auto k = nlohmann::json::parse(sys.provenance_json)["kernels"];
  EXPECT_EQ(k["models"], nlohmann::json({"matmul: gemm_grid of 242 measured points",
                                         "group_matmul: no grouped_grid (no expert shape has both GEMMs measured); "
                                         "per-shape entries kept"}));
}

TEST(KernelsGridTest, ModelsCarryTheRunsProvenance) {
  const SystemConfig sys = built_system();
  const auto p = nlohmann::json::parse(sys.ops.at("matmul").gemm_model->provenance_json);
  EXPECT_EQ(p["file"], "grid.json");
  EXPECT_EQ(p["device"], "Synthetic H100");
  EXPECT_EQ(p["grid"], "13 m × 11 n × 11 k");
  EXPECT_EQ(p["source"]["command"], "kernels_bench --grid all");
  const auto k = nlohmann::json::parse(sys.provenance_json)["kernels"];
  EXPECT_EQ(k["models"].size(), 6u);
  EXPECT_EQ(k["models"][0], "matmul: gemm_grid of 1573 measured points");
}

// The refinement levels: every 4th value of an axis of more than four and its last at level 0,
// every 2nd at 1, the rest at 2; short and categorical axes at 0; shapes off the grid -1.
TEST(KernelsGridTest, GridLevelsOfShapes) {
  const auto level = [](const std::string& op, const std::string& key) {
    return grid_level(parse_shape_key(op, key, "test", "/key"));
  };
  const auto gemm = [&](int m, int n, int k, const char* layout = "TN") {
    return level("matmul", strprintf("b=1, m=%d, k=%d, n=%d, layout=%s, accumulate=False, out_dtype=bf16", m, k, n,
                                      layout));
  };
  EXPECT_EQ(gemm(4096, 3072, 32768), 0);  // m index 8, n index 4, k the last
  EXPECT_EQ(gemm(1024, 3072, 256), 1);    // m index 6
  EXPECT_EQ(gemm(4096, 512, 256), 2);     // n index 1
  EXPECT_EQ(gemm(384, 3072, 256), -1);    // m off the grid
  EXPECT_EQ(gemm(4096, 3072, 256, "NN"), -1);
  // DeepSeek-V3's up projection (n = 2I, k = h) and down projection on 8 experts per rank.
  EXPECT_EQ(level("group_matmul", grid_grouped_key(8, 512, 4096, 7168, false)), 0);
  EXPECT_EQ(level("fp8_group_matmul", grid_grouped_key(8, 2048, 7168, 2048, true)), 1);
  EXPECT_EQ(level("group_matmul", grid_grouped_key(8, 32, 7168, 2048, false)), 2);
  EXPECT_EQ(level("group_matmul", grid_grouped_key(8, 512, 7168, 4096, false)), -1);  // no such expert
  const auto sdpa = [&](int seq, int heads, int kv, int qk, int v) {
    return level("sdp_fwd", strprintf("batch=1, seq_len=%d, head_num=%d, kv_head_num=%d, qk_head_dim=%d, "
                                      "v_head_dim=%d, qkv_contiguous=True", seq, heads, kv, qk, v));
  };
  EXPECT_EQ(sdpa(16384, 32, 4, 128, 128), 0);
  EXPECT_EQ(sdpa(4096, 64, 64, 192, 128), 1);
  EXPECT_EQ(sdpa(2048, 16, 2, 64, 64), 2);
  EXPECT_EQ(sdpa(4096, 32, 4, 96, 96), -1);
}

// A grid run's order: memory-bound and latency items, level 0 of every family (gemm 4 m × 4 n ×
// 4 k per dtype; grouped 20 series × 3 token counts × 2 GEMMs per dtype; attention 7 head-dim and
// GQA pairs × 3 heads × 3 sequences per direction), a shapes file's off-grid shape, level 1, 2.
TEST(KernelsGridTest, AGridRunsCoarseToFine) {
  ShapesDoc shapes;
  shapes.shapes = grid_compute_shapes(all_grid());
  ShapeEntry extra;
  extra.op = "matmul";
  extra.key = kPlanKey;
  extra.shape = parse_shape_key("matmul", kPlanKey, "test", "/key");
  extra.flops = shape_flops("matmul", extra.shape);
  shapes.shapes.push_back(extra);
  PlanOptions o;
  o.grid_memory = true;
  BenchPlan plan = make_plan(shapes, o);
  order_coarse_to_fine(plan);
  std::vector<int> steps;  // 0 memory/latency, then level + 1 (the off-grid shape: -1 + 1)
  std::map<std::pair<int, std::string>, int> per;
  double memory_s = 0, level0_s = 0, off_grid_s = 0;  // the items' own estimates, summed here
  for (const auto& it : plan.items) {
    const int step = it.shape ? it.level + 1 : -1;
    if (steps.empty() || steps.back() != step) steps.push_back(step);
    ++per[{it.level, it.op}];
    if (!it.shape)
      memory_s += it.est_s;
    else if (it.level == 0)
      level0_s += it.est_s;
    else if (it.level < 0)
      off_grid_s += it.est_s;
  }
  EXPECT_EQ(steps, (std::vector<int>{-1, 1, 0, 2, 3}));
  for (const char* op : {"matmul", "fp8_matmul"}) EXPECT_EQ((per[{0, op}]), 64) << op;
  for (const char* op : {"group_matmul", "fp8_group_matmul"}) EXPECT_EQ((per[{0, op}]), 120) << op;
  for (const char* op : {"sdp_fwd", "sdp_bwd"}) EXPECT_EQ((per[{0, op}]), 63) << op;
  EXPECT_EQ((per[{-1, "matmul"}]), 1);
  // Each step's line: its items, their time, and the time elapsed at its end (the steps before it
  // included).
  const std::string text = format_plan(plan, o);
  const std::string level0 = strprintf("  %-44s %6d items %9s, done after %s\n", "grid level 0 (every 4th value of each axis)",
                                       494, format_duration(level0_s).c_str(),
                                       format_duration(memory_s + level0_s).c_str());
  const std::string off_grid =
      strprintf("  %-44s %6d items %9s, done after %s\n", "the shapes files' shapes off the grid", 1,
                format_duration(off_grid_s).c_str(), format_duration(memory_s + level0_s + off_grid_s).c_str());
  EXPECT_NE(text.find(level0), std::string::npos) << level0 << text;
  EXPECT_NE(text.find(off_grid), std::string::npos) << off_grid << text;
  // The claim of docs/kernels-bench.md: on an H100 a coarse grid of every family within seven minutes.
  EXPECT_LT(memory_s + level0_s, 7 * 60.0);
}

// A run cut after grid level 0 (a budget of about six and a half minutes on an H100) builds every
// family's model, and where the function is a power law in each axis (log-linear, as the
// synthetic GEMM and grouped efficiencies are) the coarse grid answers held-out shapes exactly.
TEST(KernelsGridTest, ARunCutAfterLevelZeroCalibratesEveryFamily) {
  const GridSpec g = all_grid();
  KernelsDoc doc = synthetic_doc(g);
  BenchPlan plan = grid_plan(g);
  order_coarse_to_fine(plan);
  for (const BenchItem& it : plan.items)
    if (!it.shape || it.level == 0) doc.results.push_back(timed(it, synthetic_seconds(it, gemm_eff)));
  const ConfigText base = resolve_config("system", "h100-sxm-80g");
  SystemConfig built = load_system(base.text, base.source);
  merge_kernels(built, kernels_to_json_text(doc), "coarse.json");
  const SystemConfig sys = load_system(system_to_json_text(built), "built.json");
  for (const char* op : {"matmul", "fp8_matmul"}) {
    const ComputeOpConfig& c = sys.ops.at(op);
    ASSERT_TRUE(c.gemm_model) << op;
    EXPECT_EQ(c.gemm_model->points(), 64u);
    const double peak = is_fp8_op(op) ? kPeakFp8 : kPeak;
    const GemmAnswer a = c.gemm_model->predict(3072, 7168, 14336);
    EXPECT_EQ(a.source, EfficiencySource::Interpolated);
    EXPECT_NEAR(a.time_s / (2.0 * 3072 * 7168 * 14336 / (peak * gemm_eff(3072, 7168, 14336))), 1.0, kFilePrecision);
  }
  for (const char* op : {"group_matmul", "fp8_group_matmul"}) {
    const ComputeOpConfig& c = sys.ops.at(op);
    ASSERT_TRUE(c.grouped_model) << op;
    EXPECT_EQ(c.grouped_model->series().size(), 20u);
    const GroupedAnswer a = c.grouped_model->predict(700, 16, 7168, 2048);
    EXPECT_NEAR(a.s_per_flop * (is_fp8_op(op) ? kPeakFp8 : kPeak) * grouped_eff(700), 1.0, kFilePrecision) << op;
  }
  for (const auto& [op, eff] : {std::pair{"sdp_fwd", 0.55}, std::pair{"sdp_bwd", 0.45}}) {
    const ComputeOpConfig& c = sys.ops.at(op);
    ASSERT_TRUE(c.point_model) << op;
    EXPECT_EQ(c.point_model->points(), 63u);
    // The kernel structure's fixed and per-wave terms, fitted on three sequence lengths (1,024,
    // 16,384, 32,768), approximate a constant efficiency less closely than on the whole grid's six
    // (0.2 % above): within 1.5 % at 6,144, a length between them.
    const EfficiencyAnswer a = c.point_model->predict(sdpa_key(1, 6144, 40, 8, 128, 128, true));
    EXPECT_NEAR(a.efficiency / (eff * kPeak / c.peak_flops), 1.0, 0.015) << op;
  }
}

// The grid description under provenance.grid is read by the fits: a wrong type is an input
// error at its path (it was "internal error: [json.exception.type_error.306] ...", no file named),
// a grid that is not an object too (it was skipped without a word: no model fitted).
std::string grid_error(const std::function<void(nlohmann::json&)>& edit) {
  KernelsDoc doc = synthetic_doc(all_grid());
  nlohmann::json prov = nlohmann::json::parse(doc.provenance_json);
  edit(prov["grid"]);
  doc.provenance_json = prov.dump();
  const ConfigText base = resolve_config("system", "h100-sxm-80g");
  SystemConfig sys = load_system(base.text, base.source);
  try {
    merge_kernels(sys, kernels_to_json_text(doc), "grid.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(KernelsGridTest, AMalformedGridDescriptionIsAnErrorAtItsPath) {
  EXPECT_EQ(grid_error([](nlohmann::json& g) { g = "all"; }),
            "grid.json: /provenance/grid: expected an object (the grid kernels_bench --grid ran), got a string");
  EXPECT_EQ(grid_error([](nlohmann::json& g) { g["gemm"] = nlohmann::json::array({1, 2}); }),
            "grid.json: /provenance/grid/gemm: expected an object (as kernels_bench --grid writes it), got an array");
  EXPECT_EQ(grid_error([](nlohmann::json& g) {
              g["gemm"]["m"] = "x";
              g["grouped"]["tokens"] = {128, "x"};
              g["grouped"]["series"][0]["experts"] = "8";
              g["grouped"]["series"][1] = 5;
              g["grouped"]["series"][2].erase("inter");
            }),
            "grid.json: /provenance/grid/gemm/m: expected an array of numbers (as kernels_bench --grid writes it), got "
            "a string\n"
            "grid.json: /provenance/grid/grouped/tokens/1: expected a number, got a string\n"
            "grid.json: /provenance/grid/grouped/series/0/experts: expected a number, got a string\n"
            "grid.json: /provenance/grid/grouped/series/1: expected an object {experts, hidden, inter}, got a number\n"
            "grid.json: /provenance/grid/grouped/series/2/inter: required number is missing");
  EXPECT_EQ(grid_error([](nlohmann::json& g) { g["grouped"]["series"] = "x"; }),
            "grid.json: /provenance/grid/grouped/series: expected an array of {experts, hidden, inter}, got a string");
}

// The run's provenance is copied into the models' records as it is: a date, version or command
// that is not a string was "internal error: [json.exception.type_error.302] (/date) ...".
TEST(KernelsGridTest, TheRunsProvenanceIsCopiedWhateverItsTypes) {
  nlohmann::json run = nlohmann::json::parse(synthetic_grid_run());
  run["provenance"]["date"] = 20261127;
  run["provenance"]["version"] = 3;
  run["provenance"]["command"] = {"kernels_bench", "--grid", "all"};
  const ConfigText base = resolve_config("system", "h100-sxm-80g");
  SystemConfig sys = load_system(base.text, base.source);
  merge_kernels(sys, run.dump(), "grid.json");
  const auto p = nlohmann::json::parse(sys.ops.at("matmul").gemm_model->provenance_json);
  EXPECT_EQ(p["source"]["date"], 20261127);
  EXPECT_EQ(p["source"]["version"], 3);
  EXPECT_EQ(p["source"]["command"], nlohmann::json({"kernels_bench", "--grid", "all"}));
  const auto k = nlohmann::json::parse(sys.provenance_json)["kernels"];
  EXPECT_EQ(k["date"], 20261127);
  EXPECT_EQ(k["command"], nlohmann::json({"kernels_bench", "--grid", "all"}));
}

}  // namespace
}  // namespace trainsim::kb
