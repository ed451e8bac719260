// Accuracy-suite tables: CSV parsing, folder checks, error and summary math.
#include <gtest/gtest.h>

#include <string>

#include "test_estimate.h"
#include "core/error.h"
#include "core/text.h"
#include "core/units.h"
#include "estimate/estimate.h"
#include "cli/validation_runner.h"
#include "test_errors.h"

namespace trainsim {
namespace {

const std::string kData = std::string(TRAINSIM_TEST_DATA) + "/validation";

using test::error_of;

TEST(ValidationTable, LoadsFixtureTable) {
  ValidationTable t = load_validation_table(kData + "/tiny");
  EXPECT_EQ(t.name, "tiny");
  EXPECT_EQ(t.system, "a100-pcie-simumax");  // comments and blanks of system.txt dropped
  ASSERT_EQ(t.metrics.size(), 1u);
  EXPECT_EQ(t.metrics[0], ValidationMetric::IterationMs);
  ASSERT_EQ(t.cases.size(), 2u);

  const ValidationCase& a = t.cases[0];
  EXPECT_EQ(a.name, "small_tp1");
  EXPECT_EQ(a.line, 2);
  EXPECT_DOUBLE_EQ(a.real[0], 100.0);
  // The peer's TFLOPS error −1.46 % is a step-time error of 100·(1/0.9854 − 1).
  ASSERT_TRUE(a.peer_err_pct[0].has_value());
  EXPECT_NEAR(*a.peer_err_pct[0], 1.4816318246, 1e-9);
  ASSERT_EQ(a.info.size(), 2u);
  EXPECT_EQ(a.info[0], (std::pair<std::string, std::string>{"layers", "2"}));
  EXPECT_EQ(a.info[1], (std::pair<std::string, std::string>{"note", "plain, no recompute"}));
  EXPECT_EQ(t.case_dir(a), kData + "/tiny/cases/small_tp1");

  const ValidationCase& b = t.cases[1];
  EXPECT_EQ(b.name, "small_tp2");
  EXPECT_EQ(b.line, 4);  // a blank line is skipped but counted
  EXPECT_DOUBLE_EQ(b.real[0], 250.5);
  EXPECT_FALSE(b.peer_err_pct[0].has_value());  // empty cell: not published

  // Not a file in the table folder: resolved as a preset.
  EXPECT_EQ(resolve_table_system(t).source, resolve_config("system", "a100-pcie-simumax").source);
}

TEST(ValidationTable, FindsTableFolders) {
  auto dirs = find_validation_tables(kData);
  ASSERT_EQ(dirs.size(), 4u);
  EXPECT_EQ(dirs[0], kData + "/bad_fields");
  EXPECT_EQ(dirs[1], kData + "/megatron_memory");
  EXPECT_EQ(dirs[2], kData + "/missing_case");
  EXPECT_EQ(dirs[3], kData + "/tiny");
  // A table folder stands for itself.
  EXPECT_EQ(find_validation_tables(kData + "/tiny"), std::vector<std::string>{kData + "/tiny"});
  EXPECT_EQ(validation_table_name("validation/korthikanti2022/"), "korthikanti2022");
  EXPECT_EQ(validation_table_name("validation/nemo2407_h100"), "nemo2407_h100");
  EXPECT_EQ(validation_table_name(kData + "/tiny/cases/.."), "tiny");
  EXPECT_EQ(error_of([] { (void)find_validation_tables(kData + "/tiny/cases"); }),
            kData + "/tiny/cases: holds no table folder (a folder with a cases.csv)");
}

TEST(ValidationTable, ParsesPerLayerMetricsAndPeerColumns) {
  ValidationTable t = parse_validation_csv(
      "case,real_layer_fwd_ms,real_layer_bwd_ms,real_layer_ms,peer_err_pct_layer_ms\n"
      "baseline,7.7,11.9,19.6,-3.5\n",
      "t.csv");
  ASSERT_EQ(t.metrics.size(), 3u);
  EXPECT_EQ(t.metrics[0], ValidationMetric::LayerFwdMs);
  EXPECT_EQ(t.metrics[1], ValidationMetric::LayerBwdMs);
  EXPECT_EQ(t.metrics[2], ValidationMetric::LayerMs);
  ASSERT_EQ(t.cases.size(), 1u);
  EXPECT_DOUBLE_EQ(t.cases[0].real[1], 11.9);
  EXPECT_FALSE(t.cases[0].peer_err_pct[0].has_value());
  ASSERT_TRUE(t.cases[0].peer_err_pct[2].has_value());
  EXPECT_DOUBLE_EQ(*t.cases[0].peer_err_pct[2], -3.5);  // already on the compared metric
}

TEST(ValidationTable, MalformedRowNamesFileAndLine) {
  EXPECT_EQ(error_of([] { (void)load_validation_table(kData + "/bad_fields"); }),
            kData + "/bad_fields/cases.csv: line 3: expected 4 fields (as in the header), got 3");
}

TEST(ValidationTable, MissingAndOrphanCaseFolders) {
  const std::string d = kData + "/missing_case";
  EXPECT_EQ(error_of([&] { (void)load_validation_table(d); }),
            d + "/cases.csv: line 2: case 'absent': missing " + d + "/cases/absent/model.json\n" +
            d + "/cases.csv: line 2: case 'absent': missing " + d + "/cases/absent/strategy.json\n" +
            d + "/cases.csv: folder " + d + "/cases/orphan has no row in cases.csv");
}

TEST(ValidationTable, CsvErrorMessages) {
  auto err = [](const std::string& text) {
    return error_of([&] { (void)parse_validation_csv(text, "t.csv"); });
  };
  EXPECT_EQ(err(""), "t.csv: is empty; expected a header line starting with 'case'");
  EXPECT_EQ(err("name,real_iteration_ms\n"), "t.csv: line 1: the first column must be 'case', got 'name'");
  EXPECT_EQ(err("case,real_iteration_ms\n"), "t.csv: has a header but no case rows");
  EXPECT_EQ(err("case,real_iteraton_ms\na,1\n"),
            "t.csv: line 1: unknown column 'real_iteraton_ms'; valid names: real_iteration_ms, "
            "real_layer_fwd_ms, real_layer_bwd_ms, real_layer_ms, real_alloc_gib, real_reserved_gib; "
            "did you mean 'real_iteration_ms'?");
  EXPECT_EQ(err("case,layers\na,1\n"),
            "t.csv: line 1: no compared metric; expected at least one of the columns real_iteration_ms, "
            "real_layer_fwd_ms, real_layer_bwd_ms, real_layer_ms, real_alloc_gib, real_reserved_gib");
  EXPECT_EQ(err("case,real_layer_ms,peer_tflops_err_pct\na,1,2\n"),
            "t.csv: line 1: column 'peer_tflops_err_pct' needs the column 'real_iteration_ms'");
  EXPECT_EQ(err("case,real_iteration_ms,real_iteration_ms\n"),
            "t.csv: line 1: duplicate column 'real_iteration_ms'");
  EXPECT_EQ(err("case,real_iteration_ms\na,abc\n"),
            "t.csv: line 2: column 'real_iteration_ms': expected a positive number, got 'abc'");
  EXPECT_EQ(err("case,real_iteration_ms\na,0\n"),
            "t.csv: line 2: column 'real_iteration_ms': expected a positive number, got '0'");
  for (const char* v : {"1e400", "inf", "nan", "0x10", "5ms", "+5", "1e-400"})
    EXPECT_EQ(err(std::string("case,real_iteration_ms\na,") + v + "\n"),
              std::string("t.csv: line 2: column 'real_iteration_ms': expected a positive number, got '") + v + "'");
  EXPECT_EQ(err("case,real_iteration_ms,peer_tflops_err_pct\na,1,-100\n"),
            "t.csv: line 2: column 'peer_tflops_err_pct': expected a number above -100 or nothing, got '-100'");
  EXPECT_EQ(err("case,real_iteration_ms\na,1\n\na,2\n"), "t.csv: line 4: duplicate case 'a' (first on line 2)");
  EXPECT_EQ(err("case,real_iteration_ms\n../x,1\n"),
            "t.csv: line 2: invalid case name '../x'; use letters, digits, '.', '_' and '-' (not first '.')");
  EXPECT_EQ(err("case,real_iteration_ms\n\"a,1\n"), "t.csv: line 2: unterminated or misplaced double quote");
}

// The CSV number parser (shared with comm_bench's nccl-tests import).
TEST(ValidationTable, ParseDoubleTakesWholeFiniteTokens) {
  double x = -1;
  EXPECT_TRUE(parse_double("12.5", x));
  EXPECT_EQ(x, 12.5);
  EXPECT_TRUE(parse_double("-1e-3", x));
  EXPECT_EQ(x, -1e-3);
  for (const char* bad : {"", " 1", "1 ", "1x", "+1", "0x10", "inf", "nan", "1e400", "1e-400", "."}) {
    x = 7;
    EXPECT_FALSE(parse_double(bad, x)) << bad;
    EXPECT_EQ(x, 7) << bad;
  }
}

TEST(ValidationMath, SignedErrors) {
  EXPECT_NEAR(signed_error_pct(110, 100), 10.0, 1e-12);
  EXPECT_NEAR(signed_error_pct(90, 100), -10.0, 1e-12);
  EXPECT_NEAR(signed_error_pct(7.7, 7.7), 0.0, 1e-12);
  // +25 % TFLOPS is a step 1/1.25 = 0.8 as long: −20 % time.
  EXPECT_NEAR(time_error_from_tflops_error(25.0), -20.0, 1e-12);
  EXPECT_NEAR(time_error_from_tflops_error(-1.46), 1.4816318246, 1e-9);
}

TEST(ValidationMath, SummaryOverComparedRows) {
  ValidationTable t = parse_validation_csv(
      "case,real_iteration_ms,peer_err_pct_iteration_ms\n"
      "a,100,2\n"
      "b,200,-5\n"
      "c,400,7\n"
      "d,50,\n",
      "t.csv");
  std::vector<CaseResult> results = {
      {"a", "", {110.0}, {}, 0},            // +10 %
      {"b", "", {190.0}, {}, 0},            // −5 %
      {"c", "estimate failed", {}, {}, 0},  // not compared: its peer error is left out too
      {"d", "", {49.0}, {}, 0},             // −2 %, no peer error
  };
  auto s = summarize(t, results);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].metric, ValidationMetric::IterationMs);
  EXPECT_EQ(s[0].cases, 4);
  EXPECT_EQ(s[0].compared, 3);
  EXPECT_NEAR(s[0].mean_abs_err_pct, (10.0 + 5.0 + 2.0) / 3, 1e-9);
  EXPECT_NEAR(s[0].max_abs_err_pct, 10.0, 1e-9);
  EXPECT_EQ(s[0].max_case, "a");
  EXPECT_EQ(s[0].peer_compared, 2);
  EXPECT_NEAR(s[0].peer_mean_abs_err_pct, 3.5, 1e-12);
  EXPECT_NEAR(s[0].peer_max_abs_err_pct, 5.0, 1e-12);
  // Every published peer error, the failed row's included: (2 + 5 + 7) / 3.
  EXPECT_EQ(s[0].peer_published, 3);
  EXPECT_NEAR(s[0].peer_published_mean_abs_err_pct, 14.0 / 3, 1e-12);
  EXPECT_NEAR(s[0].peer_published_max_abs_err_pct, 7.0, 1e-12);
}

TEST(ValidationTable, ParsesMemoryMetrics) {
  ValidationTable t = parse_validation_csv(
      "case,real_iteration_ms,real_alloc_gib,real_reserved_gib,model\n"
      "a,843.0,66.55,70.88,llama3-70b\n",
      "t.csv");
  ASSERT_EQ(t.metrics.size(), 3u);
  EXPECT_EQ(t.metrics[0], ValidationMetric::IterationMs);
  EXPECT_EQ(t.metrics[1], ValidationMetric::AllocGib);
  EXPECT_EQ(t.metrics[2], ValidationMetric::ReservedGib);
  EXPECT_FALSE(is_memory_metric(t.metrics[0]));
  EXPECT_TRUE(is_memory_metric(t.metrics[1]));
  EXPECT_TRUE(is_memory_metric(t.metrics[2]));
  EXPECT_DOUBLE_EQ(t.cases[0].real[1], 66.55);
  EXPECT_DOUBLE_EQ(t.cases[0].real[2], 70.88);
  EXPECT_EQ(metric_names(), (std::vector<std::string>{"iteration_ms", "layer_fwd_ms", "layer_bwd_ms", "layer_ms",
                                                      "alloc_gib", "reserved_gib"}));
}

// Memory metrics summarize like times: signed error (predicted / real − 1)·100, mean and max of
// |error| over the predicted rows.
TEST(ValidationMath, MemoryMetricErrors) {
  ValidationTable t = parse_validation_csv(
      "case,real_alloc_gib,real_reserved_gib\n"
      "a,50,53\n"
      "b,40,42\n"
      "c,10,11\n",
      "t.csv");
  std::vector<CaseResult> results(3);
  results[0].name = "a";
  results[0].predicted = {51.0, 50.35};  // +2 %, −5 %
  results[1].name = "b";
  results[1].predicted = {39.0, 42.84};  // −2.5 %, +2 %
  results[2].name = "c";
  results[2].error = "estimate failed";  // not compared
  const auto s = summarize(t, results);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].metric, ValidationMetric::AllocGib);
  EXPECT_EQ(s[0].compared, 2);
  EXPECT_NEAR(s[0].mean_abs_err_pct, (2.0 + 2.5) / 2, 1e-9);
  EXPECT_NEAR(s[0].max_abs_err_pct, 2.5, 1e-9);
  EXPECT_EQ(s[0].max_case, "b");
  EXPECT_EQ(s[1].metric, ValidationMetric::ReservedGib);
  EXPECT_NEAR(s[1].mean_abs_err_pct, (5.0 + 2.0) / 2, 1e-9);
  EXPECT_NEAR(s[1].max_abs_err_pct, 5.0, 1e-9);
  EXPECT_EQ(s[1].max_case, "a");
}

// Every real run ran: the cases predicted not to fit are listed, in table order.
TEST(ValidationMath, FitSummaryCountsRunsPredictedNotToFit) {
  std::vector<CaseResult> results(5);
  const double headroom_gib[] = {3.5, -6.74, 12.0, -0.94, 0};
  for (size_t i = 0; i < results.size(); ++i) {
    results[i].name = std::string(1, static_cast<char>('a' + i));
    results[i].fit.known = true;
    results[i].fit.headroom_bytes = headroom_gib[i] * kGiB;
    results[i].fit.fits = headroom_gib[i] >= 0;
  }
  results[2].error = "estimate failed";  // no verdict
  const FitSummary f = summarize_fit(results);
  EXPECT_EQ(f.predicted, 4);
  EXPECT_EQ(f.fits, 2);
  EXPECT_EQ(f.not_fit, (std::vector<std::string>{"b", "d"}));
  EXPECT_NEAR(f.least_headroom_gib, -6.74, 1e-12);
  EXPECT_EQ(f.least_case, "b");
}

// A table of per-layer timings (Korthikanti et al. 2022, Table 4) times one layer of a model the
// runner writes around it: its cases are not the runs that were timed, so their verdicts are not
// counted as misses; a table with a step-time or memory metric measures whole runs.
TEST(ValidationMath, PerLayerTablesAreNotWholeRuns) {
  const std::string root = std::string(TRAINSIM_SOURCE_DIR) + "/validation/";
  const ValidationTable layers = load_validation_table(root + "korthikanti2022");
  const ValidationTable runs = load_validation_table(root + "b200_megatron");
  EXPECT_FALSE(measures_whole_runs(layers));
  EXPECT_TRUE(measures_whole_runs(runs));
  std::vector<CaseResult> results(layers.cases.size());
  for (size_t i = 0; i < results.size(); ++i) {
    results[i].name = layers.cases[i].name;
    results[i].fit.known = true;
    results[i].fit.fits = i % 2 == 0;
    results[i].fit.headroom_bytes = (i % 2 == 0 ? 1.0 : -1.0) * kGiB;
  }
  const FitSummary f = summarize_fit(layers, results);
  EXPECT_FALSE(f.whole_runs);
  EXPECT_EQ(f.predicted, 5);
  EXPECT_EQ(f.fits, 3);
  EXPECT_TRUE(summarize_fit(results).whole_runs);
}

// A case given as a Megatron-LM command line predicts the same as its model and strategy files:
// memory metrics are the estimate's peak allocated and reserved bytes, and the verdict is the
// plan's.
TEST(ValidationTable, MegatronArgsCaseAndMemoryMetrics) {
  ValidationTable t = load_validation_table(kData + "/megatron_memory");
  ASSERT_EQ(t.cases.size(), 2u);
  ASSERT_EQ(t.metrics.size(), 3u);
  const ConfigText text = resolve_table_system(t);
  const SystemConfig sys = load_system(text.text, text.source);
  const CaseResult a = run_validation_case(t, t.cases[0], sys, text.source);
  const CaseResult b = run_validation_case(t, t.cases[1], sys, text.source);
  ASSERT_TRUE(a.ok()) << a.error;
  ASSERT_TRUE(b.ok()) << b.error;
  const ValidationPlan p = load_validation_plan(t, t.cases[0]);
  EXPECT_EQ(p.strategy.tp_size, 2);
  EXPECT_EQ(p.model.layer_num, 4);
  EXPECT_EQ(p.model_source, t.case_dir(t.cases[0]) + "/megatron_args.txt");
  const Estimate e = estimate(p.model, p.strategy, sys);
  EXPECT_DOUBLE_EQ(a.predicted[0], e.iteration_time_s * 1e3);
  EXPECT_DOUBLE_EQ(a.predicted[1], e.peak_alloc_bytes() / kGiB);
  EXPECT_DOUBLE_EQ(a.predicted[2], e.peak_reserved_bytes() / kGiB);
  EXPECT_DOUBLE_EQ(a.peak_alloc_bytes, e.peak_alloc_bytes());
  EXPECT_TRUE(a.fit.known);
  // The same plan as files: the same predictions.
  EXPECT_EQ(a.predicted, b.predicted);
  EXPECT_EQ(a.fit.headroom_bytes, b.fit.headroom_bytes);
}

TEST(ValidationMath, PerLayerMetricsNeedOneStage) {
  ModelConfig m;
  m.layer_num = 48;
  StrategyConfig s;
  s.pp_size = 2;
  SystemConfig sys;
  try {
    (void)predict_metrics({ValidationMetric::LayerMs}, m, s, sys);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "per-layer metrics need pp_size 1 (every layer on one stage), got 2");
  }
  s.pp_size = 1;
  m.layer_num = 5;
  try {
    (void)predict_metrics({ValidationMetric::LayerFwdMs}, m, s, sys);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "per-layer metrics need an even layer_num (the plan is also estimated with half the "
                 "layers), got 5");
  }
}

// The shipped accuracy suite (validation/): every table loads and every case predicts, with a
// verdict, in the default mode; the memory table compares its three metrics.
TEST(ShippedTables, EveryCasePredictsWithAVerdict) {
  const std::string root = std::string(TRAINSIM_SOURCE_DIR) + "/validation";
  std::vector<std::string> names;
  for (const auto& dir : find_validation_tables(root)) {
    const ValidationTable t = load_validation_table(dir);
    names.push_back(t.name);
    const ConfigText text = resolve_table_system(t);
    const SystemConfig sys = load_system(text.text, text.source);
    for (const auto& c : t.cases) {
      const CaseResult r = run_validation_case(t, c, sys, text.source);
      ASSERT_TRUE(r.ok()) << t.name << "/" << c.name << ": " << r.error;
      ASSERT_EQ(r.predicted.size(), t.metrics.size());
      for (const double v : r.predicted) EXPECT_GT(v, 0) << t.name << "/" << c.name;
      EXPECT_TRUE(r.fit.known) << t.name << "/" << c.name;
      EXPECT_GT(r.peak_alloc_bytes, 0);
      EXPECT_GE(r.peak_reserved_bytes, r.peak_alloc_bytes);
    }
    if (t.name == "b200_megatron") {
      EXPECT_EQ(t.cases.size(), 22u);
      EXPECT_EQ(t.metrics, (std::vector<ValidationMetric>{ValidationMetric::IterationMs, ValidationMetric::AllocGib,
                                                          ValidationMetric::ReservedGib}));
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"a100_pcie_megatron", "b200_megatron", "korthikanti2022",
                                             "megatron_bridge_2509_b200", "megatron_bridge_2509_h100",
                                             "narayanan2021", "nemo2407_h100"}));
}

}  // namespace
}  // namespace trainsim
