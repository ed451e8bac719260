// Parity with the peer SimuMax v1.2 on its 128 golden cases (tests/data/golden/README.md):
// every case within 1% on iteration time and stage memory; most are exact. And on the 126 switch
// variants (tests/data/golden-variants/README.md): every case within 1% but the known misses
// listed below, each with what is not reproduced yet.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "test_estimate.h"
#include "system/presets.h"
#include "core/units.h"
#include "estimate/estimate.h"

namespace trainsim {
namespace {

const std::string kDir = std::string(TRAINSIM_TEST_DATA) + "/golden";
const std::string kVariantDir = std::string(TRAINSIM_TEST_DATA) + "/golden-variants";

struct Expected {
  std::string name, system;
  double time_ms, peak, first, last, mfu;
};

std::vector<Expected> load_expected(const std::string& dir) {
  std::ifstream f(dir + "/expected.csv");
  std::vector<Expected> out;
  std::string line;
  std::getline(f, line);  // header
  while (std::getline(f, line)) {
    std::stringstream ss(line);
    Expected e;
    std::string cell;
    std::getline(ss, e.name, ',');
    std::getline(ss, e.system, ',');
    double* fields[] = {&e.time_ms, &e.peak, &e.first, &e.last, &e.mfu};
    for (double* d : fields) {
      std::getline(ss, cell, ',');
      *d = std::stod(cell);
    }
    out.push_back(e);
  }
  return out;
}

double rel(double got, double want) { return std::fabs(got / want - 1); }

// Relative errors of one case in compat mode: time, peak, first-stage and last-stage peak, MFU.
struct CaseErrors {
  double time, peak, first, last, mfu;
  [[nodiscard]] double worst() const { return std::max({time, peak, first, last}); }
};

CaseErrors run_case(const std::string& dir, const Expected& c, std::map<std::string, SystemConfig>& systems) {
  if (!systems.count(c.system)) {
    // Both sets run on the peer's two system files (the variants' system.txt names them too).
    const std::string path = kDir + "/systems/" + c.system + ".json";
    systems.emplace(c.system, load_system(read_file(path), path));
  }
  const std::string base = dir + "/cases/" + c.name + "/";
  const ModelConfig m = load_model(read_file(base + "model.json"), base + "model.json");
  const StrategyConfig s = load_strategy(read_file(base + "strategy.json"), base + "strategy.json");
  const Estimate e = estimate(m, s, systems.at(c.system), nullptr, Mode::SimuMax12);
  return {rel(e.iteration_time_s * 1e3, c.time_ms), rel(e.peak_alloc_bytes() / kGiB, c.peak),
          rel(e.stages.front().peak_alloc_bytes / kGiB, c.first), rel(e.stages.back().peak_alloc_bytes / kGiB, c.last),
          rel(e.mfu, c.mfu)};
}

TEST(GoldenParityTest, AllCasesWithinOnePercentAndMostExact) {
  const auto cases = load_expected(kDir);
  ASSERT_EQ(cases.size(), 128u);
  std::map<std::string, SystemConfig> systems;
  int exact = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const CaseErrors d = run_case(kDir, c, systems);
    EXPECT_LT(d.time, 0.01);
    EXPECT_LT(d.peak, 0.01);
    EXPECT_LT(d.first, 0.01);
    EXPECT_LT(d.last, 0.01);
    EXPECT_LT(d.mfu, 0.01);
    // Expected values carry 4-5 significant digits: "exact" means within 0.01%.
    if (d.worst() < 1e-4) ++exact;
  }
  // 122 of 128 match exactly; the rest are DeepSeek-V2 MLA memory peaks within 0.7%.
  EXPECT_GE(exact, 122);
}

// Variants SimuMax v1.2 answers differently, by what is not reproduced yet (docs/compat.md).
// Each must still miss (a fix moves it out of this list), every other variant is within 1%.
// None today: the last ten (expert tensor parallelism) match since the unpermutation takes the
// ETP-gathered rows in compat mode.
const std::set<std::string>& known_variant_misses() {
  static const std::set<std::string> k = {};
  return k;
}

TEST(GoldenParityTest, VariantsWithinOnePercentButTheKnownMisses) {
  const auto cases = load_expected(kVariantDir);
  ASSERT_EQ(cases.size(), 126u);
  std::map<std::string, SystemConfig> systems;
  const auto& misses = known_variant_misses();
  size_t listed = 0, within = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const CaseErrors d = run_case(kVariantDir, c, systems);
    if (misses.count(c.name)) {
      ++listed;
      EXPECT_GE(d.worst(), 0.01) << "now within 1 %: remove it from known_variant_misses";
      continue;
    }
    EXPECT_LT(d.time, 0.01);
    EXPECT_LT(d.peak, 0.01);
    EXPECT_LT(d.first, 0.01);
    EXPECT_LT(d.last, 0.01);
    EXPECT_LT(d.mfu, 0.01);
    if (d.worst() < 0.01) ++within;
  }
  EXPECT_EQ(listed, misses.size()) << "a listed case is not in expected.csv";
  EXPECT_EQ(within + misses.size(), cases.size());
}

// The peer's worked example (simumax-model.md §2.1, §3.5): llama3-8b tp1 pp2 dp4 mbc8 on the
// A100-PCIe file with the peer's defaults: 5554.7 ms, MFU 0.487, stage peaks 50.8854/45.1637 GiB.
TEST(GoldenParityTest, PeerDefaultExample) {
  const std::string sys_path = kDir + "/systems/a100_pcie.json";
  const SystemConfig sys = load_system(read_file(sys_path), sys_path);
  const std::string base = kDir + "/cases/llama3-8b_l8_w8_tp1_pp2_cp1_mbc8_bf16grad-mbs2_a100_pcie/";
  ModelConfig m = load_model(read_file(base + "model.json"), base + "model.json");
  m.layer_num = 32;
  // The example's parameter count (4,015,652,864 on the first stage) implies a padded vocabulary
  // of 128,384 = 1003·128 in that run.
  m.vocab_size = 128384;
  StrategyConfig s = load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 8,
      "world_size": 8, "tp_size": 1, "pp_size": 2})", "inline");
  const Estimate e = estimate(m, s, sys, nullptr, Mode::SimuMax12);
  EXPECT_NEAR(e.iteration_time_s * 1e3, 5554.7, 0.05);
  EXPECT_NEAR(e.mfu, 0.487, 0.0005);
  EXPECT_NEAR(e.stages[0].peak_alloc_bytes / kGiB, 50.8854, 5e-5);
  EXPECT_NEAR(e.stages[1].peak_alloc_bytes / kGiB, 45.1637, 5e-5);
  // First stage: 4,015,652,864 parameters → 7.4797 GiB bf16 weights, 14.9595 GiB fp32 grads.
  EXPECT_NEAR(e.stages[0].weight_bytes / kGiB, 7.4797, 5e-5);
  EXPECT_NEAR(e.stages[0].grad_bytes / kGiB, 14.9595, 5e-5);
  // Optimizer step of the first stage (the peer's worked example): 78.62 ms.
  EXPECT_NEAR(e.stage_times[0].optimizer_s * 1e3, 78.62, 0.01);
}

}  // namespace
}  // namespace trainsim
