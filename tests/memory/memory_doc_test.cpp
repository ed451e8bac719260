// docs/memory.md shows validate's figures: the fit verdict per table and the measured-vs-predicted
// memory of the B200 table. Each row is computed again here and must read as the doc prints it.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "inputs/input_file.h"
#include "system/system_config.h"
#include "core/text.h"
#include "core/units.h"
#include "cli/validation_runner.h"

namespace trainsim {
namespace {

const std::string kRoot = std::string(TRAINSIM_SOURCE_DIR);

// The cells of a Markdown table row ("| a | b |" → {"a", "b"}), trimmed.
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  for (const auto& c : split(line, '|')) {
    const size_t b = c.find_first_not_of(' '), e = c.find_last_not_of(' ');
    out.push_back(b == std::string::npos ? "" : c.substr(b, e - b + 1));
  }
  if (out.size() >= 2) out = std::vector<std::string>(out.begin() + 1, out.end() - 1);
  return out;
}

// "`name`" or "`name` (words)" → name.
std::string ticked(const std::string& cell) {
  if (cell.size() < 2 || cell[0] != '`') return "";
  const size_t end = cell.find('`', 1);
  return end == std::string::npos ? "" : cell.substr(1, end - 1);
}

// The doc's signed percentages use the minus sign U+2212.
std::string pct(double v) {
  std::string s = strprintf("%+.2f", v);
  if (s[0] == '-') s = "\u2212" + s.substr(1);
  return s;
}
std::string gib(double v) {
  std::string s = strprintf("%.2f", v);
  if (s[0] == '-') s = "\u2212" + s.substr(1);
  return s;
}

std::vector<CaseResult> run_table(const ValidationTable& t) {
  const ConfigText text = resolve_table_system(t);
  const SystemConfig sys = load_system(text.text, text.source);
  std::vector<CaseResult> out;
  for (const auto& c : t.cases) out.push_back(run_validation_case(t, c, sys, text.source));
  return out;
}

std::vector<std::string> doc_lines() {
  std::istringstream in(read_file(kRoot + "/docs/memory.md"));
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// | `table` (what) | runs | predicted to fit | least headroom | of them TIGHT | for every table in
// validation/ (TIGHT counted as fitting).
TEST(MemoryDoc, FitVerdictTableIsValidates) {
  int rows = 0;
  for (const auto& line : doc_lines()) {
    const std::vector<std::string> c = cells(line);
    if (c.size() < 4) continue;
    const std::string name = ticked(c[0]);
    if (name.empty() || !std::filesystem::exists(kRoot + "/validation/" + name + "/cases.csv")) continue;
    const ValidationTable t = load_validation_table(kRoot + "/validation/" + name);
    const FitSummary f = summarize_fit(t, run_table(t));
    SCOPED_TRACE(name);
    EXPECT_EQ(c[1], std::to_string(f.predicted));
    EXPECT_EQ(c[2], std::to_string(f.fits));
    EXPECT_EQ(c[3].substr(0, c[3].find(' ')), gib(f.least_headroom_gib));
    ASSERT_GE(c.size(), 5u);
    EXPECT_EQ(c[4].substr(0, c[4].find(' ')), std::to_string(f.tight.size()));
    ++rows;
  }
  EXPECT_EQ(rows, 7);
}

// | run | `case` | allocated real | predicted | error % | reserved real | predicted | error % | headroom |
TEST(MemoryDoc, B200MeasuredAgainstPredicted) {
  const ValidationTable t = load_validation_table(kRoot + "/validation/b200_megatron");
  const std::vector<CaseResult> results = run_table(t);
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < t.cases.size(); ++i) index[t.cases[i].name] = i;
  int rows = 0;
  for (const auto& line : doc_lines()) {
    const std::vector<std::string> c = cells(line);
    if (c.size() != 9) continue;
    const auto it = index.find(ticked(c[1]));
    if (it == index.end()) continue;
    const ValidationCase& k = t.cases[it->second];
    const CaseResult& r = results[it->second];
    ASSERT_TRUE(r.ok()) << r.error;
    SCOPED_TRACE(k.name);
    EXPECT_EQ(c[2], gib(k.real[1]));
    EXPECT_EQ(c[3], gib(r.predicted[1]));
    EXPECT_EQ(c[4], pct(signed_error_pct(r.predicted[1], k.real[1])));
    EXPECT_EQ(c[5], gib(k.real[2]));
    EXPECT_EQ(c[6], gib(r.predicted[2]));
    EXPECT_EQ(c[7], pct(signed_error_pct(r.predicted[2], k.real[2])));
    EXPECT_EQ(c[8], gib(r.fit.headroom_bytes / kGiB));
    ++rows;
  }
  EXPECT_EQ(rows, 10);
}

}  // namespace
}  // namespace trainsim
