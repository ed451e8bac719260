// Crash-safe result storage: an append-only JSON-lines file next to the output, assembled into
// kernels.json at the end, so an interrupted run loses at most the shape in flight.
#pragma once

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "calibration/kernels_file.h"

namespace trainsim::kb {

class ResultStore {
 public:
  /// Results go to `out_path`; work in progress to `out_path + ".partial.jsonl"`.
  explicit ResultStore(std::string out_path);
  ~ResultStore();
  ResultStore(const ResultStore&) = delete;
  ResultStore& operator=(const ResultStore&) = delete;

  [[nodiscard]] const std::string& partial_path() const { return partial_path_; }
  [[nodiscard]] bool partial_exists() const;

  /// Results of earlier runs, in their original order: the final file if present, then the
  /// partial file (later entries replace earlier ones with the same id). A torn last line of
  /// the partial file (a write cut short) is dropped and reported in `notes`; any other
  /// malformed line is a ConfigError naming the file and line. `device_name` receives the
  /// device of the earlier run ("" when none).
  [[nodiscard]] std::vector<KernelResult> load_previous(std::vector<std::string>& notes,
                                                        std::string& device_name) const;

  /// Starts (or restarts) the partial file with the header and `kept` results.
  void begin(const KernelsDoc& header, const std::vector<KernelResult>& kept);
  /// Appends one result durably (flushed and fsynced before returning).
  void append(const KernelResult& r);
  /// Writes the final document atomically and removes the partial file.
  void finish(const KernelsDoc& doc);

 private:
  std::string out_path_, partial_path_;
  std::FILE* partial_ = nullptr;
};

}  // namespace trainsim::kb
