// Bounded, non-blocking input reading and UTF-8 validation.
#include "inputs/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <iterator>

#include "core/error.h"
#include "core/text.h"

namespace trainsim {

namespace {

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Reads fd to the end, failing once more than `cap` bytes arrive (so /dev/zero-like streams on
// stdin stop at the cap instead of exhausting memory).
std::string read_capped(int fd, const std::string& path, size_t cap) {
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw ConfigError(path, "", std::string("cannot read: ") + std::strerror(errno));
    if (n == 0) return out;
    if (out.size() + static_cast<size_t>(n) > cap)
      throw ConfigError(path, "", strprintf("larger than the input limit of %zu MiB; set "
                                            "TRAINSIM_MAX_INPUT_MIB to raise it", cap >> 20));
    out.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace

size_t max_input_bytes() {
  const char* env = std::getenv("TRAINSIM_MAX_INPUT_MIB");
  if (!env) return kDefaultMaxInputBytes;
  double mib = 0;
  // At most 1 TiB so that the byte count cannot overflow.
  if (!parse_double(env, mib) || mib < 1 || mib > (1 << 20) || mib != static_cast<double>(static_cast<int64_t>(mib)))
    throw Error(std::string("TRAINSIM_MAX_INPUT_MIB: expected a whole number of MiB in 1..1048576, got '") +
                env + "'");
  return static_cast<size_t>(mib) << 20;
}

std::string read_file(const std::string& path) {
  const size_t cap = max_input_bytes();
  std::string text;
  if (path == "-") {
    text = read_capped(STDIN_FILENO, "<stdin>", cap);
    check_utf8(text, "<stdin>");
    return text;
  }
  // O_NONBLOCK: opening a FIFO without a writer must not wait; fstat then rejects it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) throw ConfigError(path, "", "cannot open file: no such file");
    throw ConfigError(path, "", std::string("cannot open file: ") + std::strerror(errno));
  }
  try {
    struct stat st {};
    if (::fstat(fd, &st) != 0) throw ConfigError(path, "", std::string("cannot stat: ") + std::strerror(errno));
    if (!S_ISREG(st.st_mode))
      throw ConfigError(path, "", std::string("is ") + file_kind(st.st_mode) +
                                      "; expected a regular file (or '-' for standard input)");
    if (static_cast<uint64_t>(st.st_size) > cap)
      throw ConfigError(path, "", strprintf("%lld bytes is larger than the input limit of %zu MiB; set "
                                            "TRAINSIM_MAX_INPUT_MIB to raise it",
                                            static_cast<long long>(st.st_size), cap >> 20));
    text = read_capped(fd, path, cap);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  check_utf8(text, path);
  return text;
}

size_t find_invalid_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;  // overlong
      if (c == 0xED) hi = 0x9F;  // UTF-16 surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;  // overlong
      if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
    } else {
      return i;
    }
    if (i + len > n) return i;
    if (s[i + 1] < lo || s[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k)
      if (s[i + k] < 0x80 || s[i + k] > 0xBF) return i;
    i += len;
  }
  return std::string_view::npos;
}

std::string text_position(std::string_view text, size_t offset) {
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < offset && i < text.size(); ++i)
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  return strprintf("line %zu, column %zu", line, offset - line_start + 1);
}

void check_utf8(std::string_view text, const std::string& source) {
  const size_t bad = find_invalid_utf8(text);
  if (bad == std::string_view::npos) return;
  throw ConfigError(source, "", strprintf("invalid UTF-8 at byte %zu (%s): byte 0x%02X", bad,
                                          text_position(text, bad).c_str(),
                                          static_cast<unsigned>(static_cast<unsigned char>(text[bad]))));
}

std::string read_input(const std::string& path) {
  if (path != "-") return read_file(path);
  std::string text(std::istreambuf_iterator<char>(std::cin), {});
  if (std::cin.bad()) throw ConfigError("<stdin>", "", "cannot read standard input");
  return text;
}

}  // namespace trainsim
