// Cross-check of two result files of the same format (kernels_bench kernels.json or comm_bench
// comm.json): ours against published measurements of the same GPU converted to our format.
// Matching entries are compared by time; the acceptance is |ours / published - 1| <= tolerance.
#pragma once

#include <string>
#include <vector>

namespace trainsim::tools {

struct CrossRow {
  std::string what;          // "matmul b=1, m=..." or "all_reduce intra_node n=8 1048576 B"
  double ours_s = 0, published_s = 0;
  double ratio = 0;          // ours / published
  bool within = false;       // |ratio - 1| <= tolerance
};

struct CrossReport {
  std::string format;        // "kernels" or "comm"
  double tolerance = 0.05;
  std::vector<CrossRow> rows;                 // in the order of `ours`
  std::vector<std::string> only_ours, only_published;  // entries without a partner
  [[nodiscard]] size_t within_count() const;
  /// At least one matched entry and every matched entry within the tolerance.
  [[nodiscard]] bool accepted() const;
};

/// Compares two files' texts (names are for messages). kernels.json: results with status ok,
/// matched by kind|op|key, median times; comm.json: points matched by op, kind, n and
/// size_bytes (sizes below `min_bytes` are left out: latency-bound). Throws ConfigError naming
/// the file and JSON path for malformed input, and when the two files differ in format.
[[nodiscard]] CrossReport cross_check(const std::string& ours_text, const std::string& ours_name,
                                      const std::string& published_text, const std::string& published_name,
                                      double tolerance = 0.05, double min_bytes = 0);

/// Table (one line per matched entry: ours, published, ratio, verdict), the unmatched counts
/// and "acceptance (±5 %): PASS, 12 of 12 within" / "FAIL, ...".
[[nodiscard]] std::string format_report(const CrossReport& r);

}  // namespace trainsim::tools
