// Walks over a rank's steps read from a short program (the steady block repeated) equal the walks
// over the whole program: the steps themselves, and the estimate's memory and merged-step figures.
#include "test_estimate.h"
#include "schedule/steady_steps.h"

#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <optional>
#include <string>

#include "core/error.h"
#include "estimate/estimate.h"
#include "plan/plan.h"
#include "schedule/lower.h"
#include "test_presets.h"

namespace trainsim {
namespace {

using test::preset_model;
using test::preset_system;

std::vector<Step> expand(const RankSteps& rs) {
  std::vector<Step> out;
  (void)walk(rs, int64_t{0}, [&](int64_t& n, const Step& s) {
    out.push_back(s);
    ++n;  // never the same state twice: every repeat is visited
  });
  return out;
}

// The program of a + k·g micro-batches, read as the program of a with its steady block repeated,
// holds the same steps (chunk, pass, merging) in the same order on every rank.
void expect_periodic(const std::function<Program(int64_t)>& program, int64_t a, int64_t g, int64_t k) {
  const Program pa = program(a), pb = program(a + g), full = program(a + k * g);
  for (size_t r = 0; r < full.ranks.size(); ++r) {
    SCOPED_TRACE("rank " + std::to_string(r) + " a " + std::to_string(a) + " k " + std::to_string(k));
    const auto rs = periodic_steps(pa.ranks[r], pb.ranks[r], k);
    ASSERT_TRUE(rs.has_value());
    const std::vector<Step> steps = expand(*rs);
    ASSERT_EQ(steps.size(), full.ranks[r].size());
    for (size_t i = 0; i < steps.size(); ++i) {
      const Step &x = steps[i], &y = full.ranks[r][i];
      ASSERT_TRUE(x.chunk == y.chunk && x.pass == y.pass && x.merged == y.merged) << "step " << i;
    }
  }
}

// a past the warm-up with the remainder of the micro-batch count modulo the group, as the
// estimate's steady-state replay picks it.
int64_t first_point(int64_t pp, int64_t v, int64_t g, int64_t mbc) {
  const int64_t least = 2 * pp * v + 2 * g;
  return least + ((mbc - least) % g + g) % g;
}

TEST(SteadyStepsTest, EverySchedule) {
  int checked = 0;
  for (int64_t pp = 1; pp <= 8; ++pp)
    for (int64_t mbc : {97, 130, 203}) {
      const int64_t a = first_point(pp, 1, 1, mbc);
      expect_periodic([&](int64_t n) { return one_f_one_b(pp, n); }, a, 1, mbc - a);
      expect_periodic([&](int64_t n) { return zero_bubble_h1(pp, n); }, a, 1, mbc - a);
      checked += 2;
      for (int64_t v = 1; v <= 4; ++v)
        for (int64_t g : {pp, int64_t{2}, int64_t{3}})
          for (bool combined : {false, true}) {
            const int64_t b = first_point(pp, v, g, mbc);
            expect_periodic([&](int64_t n) { return interleaved(pp, v, n, g, combined); }, b, g, (mbc - b) / g);
            ++checked;
          }
    }
  EXPECT_EQ(checked, 8 * 3 * (2 + 4 * 3 * 2));
}

// A program that is not its shorter one with a block repeated is refused.
TEST(SteadyStepsTest, RefusesUnrelatedPrograms) {
  const Program a = one_f_one_b(4, 20), b = interleaved(4, 2, 21, 4);
  EXPECT_FALSE(periodic_steps(a.ranks[0], b.ranks[0], 3).has_value());
  EXPECT_FALSE(periodic_steps(a.ranks[0], a.ranks[0], 3).has_value());
}

// A walk whose state never repeats (a sum) visits every repeat; one that reaches a fixed point
// stops early with the same result.
TEST(SteadyStepsTest, WalkSkipsOnlyRepeatsThatChangeNothing) {
  const Program a = one_f_one_b(3, 10), b = one_f_one_b(3, 11), full = one_f_one_b(3, 1000);
  const auto rs = periodic_steps(a.ranks[0], b.ranks[0], 990);
  ASSERT_TRUE(rs.has_value());
  struct Sum {
    double s = 0;
  };
  int64_t visits = 0;
  auto add = [&](Sum& st, const Step& s) {
    st.s += s.pass == Pass::Forward ? 0.1 : 0.7;
    ++visits;
  };
  const double whole = walk(whole_steps(full.ranks[0]), Sum{}, add).s;
  visits = 0;
  EXPECT_EQ(walk(*rs, Sum{}, add).s, whole);
  EXPECT_EQ(visits, 2000);
  struct Live {
    double live = 0, best = 0;
  };
  for (double bytes : {0.25, 0.1}) {  // exact sums reach a fixed point; 0.1 may drift
    auto mem = [&](Live& st, const Step& s) {
      st.live += s.pass == Pass::Forward ? bytes : -bytes;
      st.best = std::max(st.best, st.live);
      ++visits;
    };
    const Live w = walk(whole_steps(full.ranks[0]), Live{}, mem);
    visits = 0;
    const Live p = walk(*rs, Live{}, mem);
    EXPECT_EQ(p.best, w.best);
    EXPECT_EQ(p.live, w.live);
    if (bytes == 0.25) {
      EXPECT_LT(visits, 40);
    }
  }
}

// Sums over the steps: a block that leaves the key as it found it is multiplied out; the terms
// here are exact in binary, so the sums are equal, not only close. A key that changes every
// block falls back to visiting every repeat.
TEST(SteadyStepsTest, SumMultipliesOutRepeatsThatKeepTheKey) {
  const Program a = one_f_one_b(3, 10), b = one_f_one_b(3, 11), full = one_f_one_b(3, 1000);
  const auto rs = periodic_steps(a.ranks[0], b.ranks[0], 990);
  ASSERT_TRUE(rs.has_value());
  int64_t visits = 0;
  // 0.75 for a backward that follows a forward, 0.25 for any other step.
  auto term = [&](int64_t& last_forward, const Step& s) {
    ++visits;
    const double t = last_forward == 1 && s.pass != Pass::Forward ? 0.75 : 0.25;
    last_forward = s.pass == Pass::Forward ? 1 : 0;
    return t;
  };
  const double whole = sum_steps(whole_steps(full.ranks[0]), int64_t{0}, term);
  EXPECT_EQ(visits, 2000);
  // 1F1B on rank 0 of 3: 2 warm-up forwards, 998 forward-backward pairs, 2 cool-down backwards.
  EXPECT_EQ(whole, 2000 * 0.25 + 998 * 0.5);
  visits = 0;
  EXPECT_EQ(sum_steps(*rs, int64_t{0}, term), whole);
  EXPECT_LT(visits, 40);
  visits = 0;
  auto counting = [&](int64_t& n, const Step&) {
    ++visits;
    ++n;  // a new key every step: no block repeats its start
    return 0.5;
  };
  EXPECT_EQ(sum_steps(*rs, int64_t{0}, counting), 1000.0);
  EXPECT_EQ(visits, 2000);
}

// Whether Megatron's interleaved order, with unit costs, can never finish.
bool deadlocks(const Program& p, P2PMode mode) {
  PipelineCosts unit;
  unit.chunks.assign(static_cast<size_t>(p.pp), std::vector<ChunkTimes>(static_cast<size_t>(p.v), {1, 1, 0}));
  return !lower(p, unit, mode).try_run(false);
}

// resolve_plan checks the program of the steady base in place of a longer one: whether blocking
// bundles pair, and whether the order deadlocks (partial last groups), agree with the longer
// program's verdicts, both ways (the grid holds programs with and without problems).
TEST(SteadyStepsTest, PlanChecksOfTheShortProgramHoldForTheLongOne) {
  int cases = 0, unpaired = 0, stuck = 0;
  for (int64_t pp = 2; pp <= 8; ++pp)
    for (int64_t v = 2; v <= 4; ++v)
      for (int64_t g : {pp, pp + 1})
        for (int64_t rest = 0; rest < g; ++rest)
          for (bool combined : {false, true}) {
            const int64_t a = first_point(pp, v, g, rest);
            const Program base = interleaved(pp, v, a, g, combined), longer = interleaved(pp, v, a + 3 * g, g, combined);
            SCOPED_TRACE("pp " + std::to_string(pp) + " v " + std::to_string(v) + " g " + std::to_string(g) + " a " +
                         std::to_string(a));
            const bool pairs = blocking_problem(longer).empty();
            EXPECT_EQ(blocking_problem(base).empty(), pairs);
            EXPECT_EQ(deadlocks(base, P2PMode::Async), deadlocks(longer, P2PMode::Async));
            if (pairs) {
              EXPECT_EQ(deadlocks(base, P2PMode::Blocking), deadlocks(longer, P2PMode::Blocking));
            }
            unpaired += pairs ? 0 : 1;
            const bool stuck_here = deadlocks(longer, P2PMode::Async);
            EXPECT_FALSE(stuck_here && rest == 0);  // resolve_plan's message: use whole groups
            stuck += stuck_here ? 1 : 0;
            ++cases;
          }
  EXPECT_EQ(cases, 462);
  EXPECT_EQ(unpaired, 378);
  // 66 without merged steps, 97 with them (a merged step waits for both its inputs); every one
  // has a partial last group (rest > 0).
  EXPECT_EQ(stuck, 163);
}

const PlanSources kSrc{"m.json", "s.json", "y.json"};

class SteadyWalkEstimateTest : public ::testing::Test {
 protected:
  void SetUp() override { sys_ = preset_system("h100-sxm-80g"); }
  std::optional<Plan> plan(const ModelConfig& m, const std::string& json) {
    try {
      return resolve_plan(m, strategies_.emplace_back(load_strategy(json, "s.json")), sys_, Mode::Default, kSrc);
    } catch (const ConfigError&) {
      return std::nullopt;  // e.g. a partial interleaved group Megatron's order cannot run
    }
  }
  SystemConfig sys_;
  std::deque<StrategyConfig> strategies_;
};

// Memory and merged-step figures of the steady-state estimate equal those of the full replay bit
// for bit; true when it extrapolated (read the short programs).
bool expect_same_walks(const Plan& p) {
  const Estimate full = estimate(p, nullptr, false, PipelineReplay::Full);
  const Estimate fast = estimate(p, nullptr, false, PipelineReplay::Steady);
  EXPECT_EQ(fast.stages.size(), full.stages.size());
  for (size_t i = 0; i < std::min(fast.stages.size(), full.stages.size()); ++i) {
    const StageMemory &a = fast.stages[i], &b = full.stages[i];
    EXPECT_EQ(a.in_flight_micro_batches, b.in_flight_micro_batches) << i;
    EXPECT_EQ(a.peak_activation_bytes, b.peak_activation_bytes) << i;
    EXPECT_EQ(a.peak_alloc_bytes, b.peak_alloc_bytes) << i;
    EXPECT_EQ(a.host_bytes, b.host_bytes) << i;
  }
  // The EP time the merged steps hide (the DP share follows the extrapolated timeline): the
  // repeats multiplied out, equal up to rounding.
  const auto ep = static_cast<size_t>(Group::EP);
  for (size_t i = 0; i < std::min(fast.stage_times.size(), full.stage_times.size()); ++i) {
    const double f = fast.stage_times[i].hidden_comm_by_group_s[ep], w = full.stage_times[i].hidden_comm_by_group_s[ep];
    EXPECT_NEAR(f, w, 1e-12 * w) << i;
  }
  return fast.engine_ops != full.engine_ops;
}

std::string strategy(int64_t pp, int64_t v, int64_t mbc, const std::string& extra) {
  return R"({"seq_len": 2048, "micro_batch_size": 1, "enable_recompute": false, "world_size": )" +
         std::to_string(2 * pp) + R"(, "pp_size": )" + std::to_string(pp) + R"(, "interleaving_size": )" +
         std::to_string(v) + R"(, "micro_batch_num": )" + std::to_string(mbc) + extra + "}";
}

TEST_F(SteadyWalkEstimateTest, Grid) {
  ModelConfig m = preset_model("llama3-8b");
  m.vocab_size = 256;
  int cases = 0, extrapolated = 0;
  for (int64_t pp = 2; pp <= 8; ++pp)
    for (int64_t v = 1; v <= 4; ++v)
      for (int64_t mbc : {101, 120, 134, 168})
        for (const std::string& extra : {std::string(), std::string(R"(, "pp_comm_async": true)"),
                                         R"(, "pp_comm_async": true, "microbatch_group_size_per_vp_stage": )" + std::to_string(pp + 1),
                                         std::string(R"(, "pipeline_schedule": "zero_bubble_h1")"),
                                         std::string(R"(, "num_layers_in_first_pipeline_stage": 1)"),
                                         std::string(R"(, "zero_state": 1, "overlap_grad_reduce": true, "overlap_param_gather": true)")}) {
          const std::string& e = extra;
          const bool uneven = e.find("first") != std::string::npos;
          if ((v > 1 && (uneven || e.find("zero_bubble") != std::string::npos)) ||
              (v == 1 && e.find("group") != std::string::npos))
            continue;
          m.layer_num = uneven ? 2 * (pp - 1) + 1 : 2 * pp * v;
          SCOPED_TRACE(e + " pp " + std::to_string(pp) + " v " + std::to_string(v) + " mbc " + std::to_string(mbc));
          const auto p = plan(m, strategy(pp, v, mbc, e));
          if (!p) continue;
          ++cases;
          extrapolated += expect_same_walks(*p) ? 1 : 0;
        }
  EXPECT_EQ(cases, 415);
  EXPECT_EQ(extrapolated, 415);
}

// Merged forward/backward steps (combined 1F1B over the EP all-to-alls): the hidden EP time.
TEST_F(SteadyWalkEstimateTest, CombinedOneFOneB) {
  ModelConfig m = preset_model("mixtral-8x7b");
  for (int64_t pp : {1, 2, 4})
    for (int64_t v : {1, 2, 3})
      for (int64_t mbc : {96, 101}) {
        if ((pp == 1) != (v == 1)) continue;  // combined 1F1B pipelines only interleaved
        m.layer_num = 2 * pp * v;
        SCOPED_TRACE("pp " + std::to_string(pp) + " v " + std::to_string(v) + " mbc " + std::to_string(mbc));
        const auto p = plan(m, R"({"seq_len": 2048, "micro_batch_size": 1, "world_size": )" + std::to_string(8 * pp) +
                                   R"(, "ep_size": 8, "pp_size": )" + std::to_string(pp) + R"(, "interleaving_size": )" +
                                   std::to_string(v) + R"(, "micro_batch_num": )" + std::to_string(mbc) +
                                   R"(, "enable_recompute": false, "pp_comm_async": true, "overlap_moe_expert_parallel_comm": true})");
        if (!p) {
          EXPECT_NE(mbc % pp, 0);  // a partial last group that Megatron's order cannot run
          continue;
        }
        ASSERT_TRUE(p->ovl.a2a_overlap);
        EXPECT_TRUE(expect_same_walks(*p));
        EXPECT_GT(estimate(*p, nullptr, false, PipelineReplay::Steady).stage_times[0].hidden_comm_by_group_s[static_cast<size_t>(Group::EP)], 0);
      }
}

}  // namespace
}  // namespace trainsim
