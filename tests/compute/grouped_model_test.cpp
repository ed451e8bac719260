// Grouped-GEMM model (compute/grouped_model.h) on synthetic series with hand-computed answers.
#include "compute/grouped_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

namespace trainsim {
namespace {

// E = 8 experts, h = 1024, I = 512: the up projection is n = 1024, k = 1024; the down one
// n = 1024, k = 512. Pair FLOPs per token per expert: 6·8·1024·512 = 25,165,824.
constexpr double kUnit = 6.0 * 8 * 1024 * 512;

GroupedSeries base() { return {8, 1024, 512, {64, 256, 1024}, {1e-4, 2e-4, 6.4e-4}}; }

// Relative agreement to 1e-12 (the model works in log space).
#define EXPECT_REL(a, b) EXPECT_NEAR(a, b, 1e-12 * std::fabs(b))

// Seconds per FLOP of the base series at its measured token counts.
double spf(double tokens, double time) { return time / (kUnit * tokens); }

TEST(GroupedModelTest, MeasuredPointsOfEitherGemmOfThePair) {
  const GroupedModel m({base()});
  EXPECT_EQ(m.points(), 3u);
  for (const auto& [n, k] : {std::pair{1024.0, 1024.0}, std::pair{1024.0, 512.0}}) {
    const GroupedAnswer a = m.predict(256, 8, n, k);
    EXPECT_EQ(a.source, EfficiencySource::Measured);
    EXPECT_REL(a.s_per_flop, spf(256, 2e-4));
  }
}

TEST(GroupedModelTest, LogLinearInTokensInsideAndHeldBeyond) {
  const GroupedModel m({base()});
  // M = 128, halfway in log between 64 and 256: the geometric mean of the seconds per FLOP.
  GroupedAnswer a = m.predict(128, 8, 1024, 1024);
  EXPECT_EQ(a.source, EfficiencySource::Interpolated);
  EXPECT_REL(a.s_per_flop, std::sqrt(spf(64, 1e-4) * spf(256, 2e-4)));
  // M = 16 below the smallest count: the time of M = 64 (memory-bound floor), 4× the s/FLOP.
  a = m.predict(16, 8, 1024, 1024);
  EXPECT_EQ(a.source, EfficiencySource::Extrapolated);
  EXPECT_REL(a.s_per_flop * kUnit * 16, 1e-4);
  // M = 4096 above the largest: the largest count's seconds per FLOP.
  a = m.predict(4096, 8, 1024, 1024);
  EXPECT_EQ(a.source, EfficiencySource::Extrapolated);
  EXPECT_REL(a.s_per_flop, spf(1024, 6.4e-4));
}

TEST(GroupedModelTest, ShapesBetweenSeriesFromALocalLinearFit) {
  GroupedSeries wide = base();
  wide.experts = 32;
  wide.time_s = {4e-4, 1.6e-3, 6.4e-3};  // half the base's seconds per FLOP
  const GroupedModel m({base(), wide});
  // E = 16 lies log 2 from both, whose samples (each series at its two GEMMs) stand
  // symmetrically about the query: the fitted value is the mean of the two series' y, i.e. the
  // geometric mean of their answers.
  const GroupedAnswer a = m.predict(256, 16, 1024, 1024);
  EXPECT_EQ(a.source, EfficiencySource::Interpolated);
  const double narrow_y = spf(256, 2e-4), wide_y = 1.6e-3 / (6.0 * 32 * 1024 * 512 * 256);
  EXPECT_REL(a.s_per_flop, std::sqrt(narrow_y * wide_y));
  // E = 64 is beyond the measured experts: extrapolated.
  EXPECT_EQ(m.predict(256, 64, 1024, 1024).source, EfficiencySource::Extrapolated);
  EXPECT_EQ(m.predict(0, 8, 1024, 1024).source, EfficiencySource::Default);
  EXPECT_EQ(GroupedModel().predict(256, 8, 1024, 1024).source, EfficiencySource::Default);
}

TEST(GroupedModelTest, ASeriesOffTheTrendOfItsNeighboursIsSetAside) {
  // Series of the base's shape at E = 4, 8, 32 and 64 with its times per FLOP, and one at
  // E = 128 eight times slower per FLOP. For E = 16 the first fit is pulled up by it (2.5 %);
  // the bisquare weights drop it (its residual is more than 6 median residuals), the second fit
  // through the others is exact, its residuals' median is 0 and it answers: the base's seconds
  // per FLOP.
  std::vector<GroupedSeries> all;
  for (double e : {4.0, 8.0, 32.0, 64.0, 128.0}) {
    GroupedSeries s = base();
    s.experts = e;
    for (double& t : s.time_s) t *= e / 8 * (e == 128 ? 8 : 1);
    all.push_back(s);
  }
  const GroupedModel m(all);
  const GroupedAnswer a = m.predict(256, 16, 1024, 1024);
  EXPECT_EQ(a.source, EfficiencySource::Interpolated);
  EXPECT_REL(a.s_per_flop, spf(256, 2e-4));
}

TEST(GroupedModelTest, SeriesOfOneShapeMergeAndBadSeriesThrow) {
  GroupedSeries again = base();
  again.tokens = {256, 4096};
  again.time_s = {8e-4, 2e-3};
  const GroupedModel m({base(), again});
  ASSERT_EQ(m.series().size(), 1u);
  EXPECT_EQ(m.points(), 4u);
  EXPECT_REL(m.series()[0].time_s[1], 4e-4);  // geometric mean of 2e-4 and 8e-4
  GroupedSeries bad = base();
  bad.time_s.pop_back();
  EXPECT_THROW(GroupedModel({bad}), std::invalid_argument);
  bad = base();
  bad.time_s[0] = -1;
  EXPECT_THROW(GroupedModel({bad}), std::invalid_argument);
  bad = base();
  bad.experts = 0;
  EXPECT_THROW(GroupedModel({bad}), std::invalid_argument);
}

// Beyond the plausible sizes and times (gemm_model.h) the held-out errors were infinite.
TEST(GroupedModelTest, ImplausibleSizesAndTimesThrow) {
  const auto message = [](const GroupedSeries& s) {
    try {
      (void)GroupedModel({s});
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  GroupedSeries bad = base();
  bad.time_s[0] = 1e-300;
  EXPECT_EQ(message(bad), "grouped series experts=8 hidden=1024 inter=512: tokens 64 time_s "
                          "1e-300: tokens must be at most 1.09951e+12 and the time from 1e-09 to 1000 s");
  bad = base();
  bad.tokens[2] = 1e300;
  EXPECT_EQ(message(bad), "grouped series experts=8 hidden=1024 inter=512: tokens 1e+300 time_s "
                          "0.00064: tokens must be at most 1.09951e+12 and the time from 1e-09 to 1000 s");
  bad = base();
  bad.experts = 1e300;
  EXPECT_EQ(message(bad),
            "grouped series experts=1e+300 hidden=1024 inter=512: experts, hidden and inter must be at most 1.09951e+12");
  // Numbers printed compactly (%g): experts 1e300 printed ~300 digits, a time -1 as -1.000000.
  bad = base();
  bad.inter = -5e299;
  EXPECT_EQ(message(bad),
            "grouped series experts=8 hidden=1024 inter=-5e+299: experts, hidden and inter must be finite and > 0");
  bad = base();
  bad.time_s[1] = -1;
  EXPECT_EQ(message(bad), "grouped series experts=8 hidden=1024 inter=512: tokens 256 time_s -1: every value must be "
                          "finite and > 0");
}

TEST(GroupedModelTest, LeaveOneOutPointsAndShapes) {
  GroupedSeries wide = base();
  wide.experts = 32;
  wide.time_s = {4e-4, 1.6e-3, 6.4e-3};
  const GroupedModel m({base(), wide});
  const auto points = m.leave_one_out(false);
  ASSERT_EQ(points.size(), 6u);
  // The base's middle point from its neighbours: s/FLOP the geometric mean of 64's and 1024's.
  EXPECT_EQ(points[1].tokens, 256);
  EXPECT_REL(points[1].predicted_s, std::sqrt(spf(64, 1e-4) * spf(1024, 6.4e-4)) * kUnit * 256);
  // Its first point: the time of its next count held (fewer tokens).
  EXPECT_REL(points[0].predicted_s, 2e-4);
  // Whole shape held out: the other series alone, at the same tokens per expert.
  const auto shapes = m.leave_one_out(true);
  ASSERT_EQ(shapes.size(), 6u);
  EXPECT_REL(shapes[1].predicted_s, 1.6e-3 / (6.0 * 32 * 1024 * 512 * 256) * kUnit * 256);
  // One series alone: nothing to go by.
  EXPECT_EQ(GroupedModel({base()}).leave_one_out(true)[0].predicted_s, 0);
}

}  // namespace
}  // namespace trainsim
