// Writing result files: one safe output path, and provenance fields.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace trainsim {

/// The one way every tool writes an output. A regular (or absent) target is written through a
/// new temporary file in its folder (O_CREAT|O_EXCL|O_NOFOLLOW, random name, the target's mode),
/// fsync'ed and renamed over it by commit(), so a reader sees the old or the new content and
/// never a half-written file; a symbolic link keeps pointing at the updated file. Anything else
/// (a FIFO, a device, "-" for standard output) is written directly and never replaced. Every
/// write is checked: a failure throws Error naming the path and the system error, and the
/// temporary file is removed (also when the object is destroyed without commit()).
class OutputFile {
 public:
  explicit OutputFile(std::string path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(std::string_view text);
  /// Makes the content visible under the path (rename); nothing may be written afterwards.
  void commit();

 private:
  [[noreturn]] void fail(int err);
  std::string path_;    // as given, for messages
  std::string target_;  // the file that ends up with the content (symbolic links resolved)
  std::string tmp_;     // temporary file, empty when writing directly
  int fd_ = -1;
  bool close_fd_ = true;
};

/// Writes `text` to `path` with OutputFile in one go.
void write_file_atomic(const std::string& path, std::string_view text);

/// Current UTC time as ISO 8601, e.g. "2026-01-31T12:00:00Z".
[[nodiscard]] std::string utc_timestamp();

/// The command line as one shell-readable string (arguments with spaces are single-quoted).
[[nodiscard]] std::string command_line(const std::string& program, const std::vector<std::string>& args);

}  // namespace trainsim
