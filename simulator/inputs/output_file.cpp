// The output path (atomic replacement of regular files, direct writes otherwise) and provenance.
#include "inputs/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>

#include "core/error.h"
#include "core/text.h"

namespace trainsim {

namespace {

std::string dir_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

OutputFile::OutputFile(std::string path) : path_(std::move(path)), target_(path_) {
  if (path_.empty()) throw Error("cannot write: empty output path");
  if (path_ == "-") {
    std::fflush(stdout);  // keep the order of anything already printed through stdio
    fd_ = STDOUT_FILENO;
    close_fd_ = false;
    return;
  }
  struct stat st {};
  mode_t mode = 0666;  // new files: the umask applies, as for any created file
  if (::lstat(path_.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      // Replace the file the link points at, not the link itself.
      char* real = ::realpath(path_.c_str(), nullptr);
      if (!real) throw Error(path_ + ": cannot write: symbolic link to a missing file (" + std::strerror(errno) + ")");
      target_ = real;
      std::free(real);
      if (::stat(target_.c_str(), &st) != 0) fail(errno);
    }
    if (S_ISDIR(st.st_mode)) throw Error(path_ + ": cannot write: is a directory");
    if (!S_ISREG(st.st_mode)) {
      // FIFO, device, socket: write in place; renaming over it would destroy it.
      fd_ = ::open(target_.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd_ < 0) fail(errno);
      return;
    }
    mode = st.st_mode & 07777;
  } else if (errno != ENOENT) {
    fail(errno);
  }
  const std::string dir = dir_of(target_), base = base_of(target_);
  std::random_device rd;
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    tmp_ = dir + "/." + base + strprintf(".%08x%08x.tmp", rd(), rd());
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd_ < 0 && errno != EEXIST) {
      tmp_.clear();
      fail(errno);
    }
  }
  if (fd_ < 0) {
    tmp_.clear();
    fail(EEXIST);
  }
  // An existing target keeps its permissions (open() applied the umask to them).
  if (mode != 0666) (void)::fchmod(fd_, mode);
}

OutputFile::~OutputFile() {
  if (fd_ >= 0 && close_fd_) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

void OutputFile::fail(int err) {
  if (fd_ >= 0 && close_fd_) ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  tmp_.clear();
  throw Error(path_ + ": cannot write: " + std::strerror(err));
}

void OutputFile::write(std::string_view text) {
  TRAINSIM_ASSERT(fd_ >= 0, "write after commit or failure");
  while (!text.empty()) {
    const ssize_t n = ::write(fd_, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(errno);
    if (n == 0) fail(EIO);
    text.remove_prefix(static_cast<size_t>(n));
  }
}

void OutputFile::commit() {
  TRAINSIM_ASSERT(fd_ >= 0, "commit after commit or failure");
  if (tmp_.empty()) {
    // Direct target: nothing to rename; a close error (e.g. NFS) still means data was lost.
    if (close_fd_ && ::close(fd_) != 0) {
      fd_ = -1;
      fail(errno);
    }
    fd_ = -1;
    return;
  }
  if (::fsync(fd_) != 0) fail(errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail(errno);
  if (::rename(tmp_.c_str(), target_.c_str()) != 0) fail(errno);
  tmp_.clear();
}

void write_file_atomic(const std::string& path, std::string_view text) {
  OutputFile f(path);
  f.write(text);
  f.commit();
}

std::string utc_timestamp() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string command_line(const std::string& program, const std::vector<std::string>& args) {
  std::string out = program;
  for (const auto& a : args) {
    bool plain = !a.empty() && a.find_first_of(" \t'\"$\\") == std::string::npos;
    out += ' ';
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace trainsim
