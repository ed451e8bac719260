// Crash-safe result storage.
#include "result_store.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "inputs/json_reader.h"
#include "inputs/output_file.h"
#include "system/presets.h"
#include "core/error.h"

namespace trainsim::kb {

ResultStore::ResultStore(std::string out_path)
    : out_path_(std::move(out_path)), partial_path_(out_path_ + ".partial.jsonl") {}

ResultStore::~ResultStore() {
  if (partial_) std::fclose(partial_);
}

bool ResultStore::partial_exists() const {
  std::error_code ec;
  return std::filesystem::exists(partial_path_, ec);
}

std::vector<KernelResult> ResultStore::load_previous(std::vector<std::string>& notes,
                                                     std::string& device_name) const {
  std::vector<KernelResult> out;
  std::map<std::string, size_t> index;
  auto add = [&](KernelResult r) {
    auto [it, fresh] = index.emplace(r.id(), out.size());
    if (fresh) {
      out.push_back(std::move(r));
    } else {
      out[it->second] = std::move(r);
    }
  };
  std::error_code ec;
  if (std::filesystem::exists(out_path_, ec)) {
    KernelsDoc doc = load_kernels(read_file(out_path_), out_path_);
    device_name = doc.device.name;
    for (auto& r : doc.results) add(std::move(r));
  }
  if (!partial_exists()) return out;
  std::string text = read_file(partial_path_);
  size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    bool torn = end == std::string::npos;  // appends always end with '\n'
    std::string line = text.substr(pos, torn ? std::string::npos : end - pos);
    pos = torn ? text.size() : end + 1;
    ++line_no;
    if (line.empty()) continue;
    std::string where = "line " + std::to_string(line_no);
    try {
      if (line_no == 1) {
        nlohmann::json header = parse_json(line, partial_path_);
        if (header.contains("device") && header["device"].is_object())
          device_name = header["device"].value("name", device_name);
        continue;
      }
      add(parse_kernel_result(line, partial_path_, where));
    } catch (const std::exception& e) {
      if (!torn) {
        if (dynamic_cast<const ConfigError*>(&e)) throw;
        throw ConfigError(partial_path_, where, std::string("malformed line: ") + e.what());
      }
      notes.push_back(partial_path_ + ": " + where + ": dropped an incomplete line (interrupted write)");
    }
  }
  return out;
}

void ResultStore::begin(const KernelsDoc& header, const std::vector<KernelResult>& kept) {
  std::string text = kernels_header_to_json_line(header) + "\n";
  for (const auto& r : kept) text += kernel_result_to_json_line(r) + "\n";
  write_file_atomic(partial_path_, text);
  partial_ = std::fopen(partial_path_.c_str(), "ab");
  if (!partial_) throw Error(partial_path_ + ": cannot append: " + std::strerror(errno));
}

void ResultStore::append(const KernelResult& r) {
  TRAINSIM_ASSERT(partial_ != nullptr, "append before begin");
  std::string line = kernel_result_to_json_line(r) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), partial_) != line.size() || std::fflush(partial_) != 0 ||
      ::fsync(::fileno(partial_)) != 0)
    throw Error(partial_path_ + ": cannot append: " + std::strerror(errno));
}

void ResultStore::finish(const KernelsDoc& doc) {
  if (partial_) {
    std::fclose(partial_);
    partial_ = nullptr;
  }
  write_file_atomic(out_path_, kernels_to_json_text(doc));
  std::remove(partial_path_.c_str());
}

}  // namespace trainsim::kb
