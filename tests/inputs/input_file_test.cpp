// The one input path: regular files or '-', a size cap, UTF-8; hostile files fail fast and clearly.
#include "inputs/input_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "system/presets.h"
#include "core/error.h"

namespace trainsim {
namespace {

std::string error_of(const std::string& path) {
  try {
    (void)read_file(path);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no error>";
}

class InputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("trainsim_input_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    ::unsetenv("TRAINSIM_MAX_INPUT_MIB");
    std::filesystem::remove_all(dir_);
  }
  std::string path(const char* name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

TEST_F(InputFileTest, ReadsARegularFileAndASymlinkToIt) {
  std::ofstream(path("a.json")) << "{\"x\": 1}";
  std::filesystem::create_symlink(path("a.json"), path("link.json"));
  EXPECT_EQ(read_file(path("a.json")), "{\"x\": 1}");
  EXPECT_EQ(read_file(path("link.json")), "{\"x\": 1}");
}

// Before: a FIFO given as --kernels/--shapes/... blocked forever in open() or read().
TEST_F(InputFileTest, FifoIsRejectedWithoutWaitingForAWriter) {
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  EXPECT_EQ(error_of(path("fifo")), path("fifo") + ": is a FIFO; expected a regular file (or '-' for standard input)");
}

// Before: /dev/zero was read until memory ran out.
TEST_F(InputFileTest, DevicesAndDirectoriesAreRejected) {
  EXPECT_EQ(error_of("/dev/zero"), "/dev/zero: is a character device; expected a regular file (or '-' for standard input)");
  EXPECT_EQ(error_of(dir_.string()), dir_.string() + ": is a directory; expected a regular file (or '-' for standard input)");
  EXPECT_EQ(error_of(path("missing.json")), path("missing.json") + ": cannot open file: no such file");
}

// resolve_config reads any existing path, so a FIFO is not mistaken for a preset name.
TEST_F(InputFileTest, ResolveConfigReadsFifosThroughTheInputPath) {
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  try {
    (void)resolve_config("model", path("fifo"));
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), path("fifo") + ": is a FIFO; expected a regular file (or '-' for standard input)");
  }
}

TEST_F(InputFileTest, SizeCapIsConfigurable) {
  std::ofstream(path("big.json")) << std::string((size_t{1} << 20) + 1, ' ');
  ::setenv("TRAINSIM_MAX_INPUT_MIB", "1", 1);
  EXPECT_EQ(error_of(path("big.json")), path("big.json") + ": 1048577 bytes is larger than the input limit of 1 MiB; "
                                                          "set TRAINSIM_MAX_INPUT_MIB to raise it");
  ::setenv("TRAINSIM_MAX_INPUT_MIB", "2", 1);
  EXPECT_EQ(read_file(path("big.json")).size(), (size_t{1} << 20) + 1);
  EXPECT_EQ(max_input_bytes(), size_t{2} << 20);
  ::setenv("TRAINSIM_MAX_INPUT_MIB", "2x", 1);
  try {
    (void)max_input_bytes();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "TRAINSIM_MAX_INPUT_MIB: expected a whole number of MiB in 1..1048576, got '2x'");
  }
  ::unsetenv("TRAINSIM_MAX_INPUT_MIB");
  EXPECT_EQ(max_input_bytes(), size_t{64} << 20);
}

// Before: invalid UTF-8 in a string ended in "internal error" when the string was written as JSON.
TEST_F(InputFileTest, InvalidUtf8IsRejectedWithItsPosition) {
  std::ofstream(path("bad.json")) << "{\n  \"model_name\": \"ab\xff\"\n}";
  EXPECT_EQ(error_of(path("bad.json")), path("bad.json") + ": invalid UTF-8 at byte 21 (line 2, column 20): byte 0xFF");
}

TEST(Utf8Test, FindsTheFirstInvalidByte) {
  EXPECT_EQ(find_invalid_utf8("plain ascii"), std::string_view::npos);
  EXPECT_EQ(find_invalid_utf8("\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), std::string_view::npos);  // été € 😀
  EXPECT_EQ(find_invalid_utf8("a\xc0\x80"), 1u);          // overlong NUL
  EXPECT_EQ(find_invalid_utf8("ab\xed\xa0\x80"), 2u);     // surrogate U+D800
  EXPECT_EQ(find_invalid_utf8("\xf4\x90\x80\x80"), 0u);   // above U+10FFFF
  EXPECT_EQ(find_invalid_utf8("\xe2\x82"), 0u);           // truncated
  EXPECT_EQ(find_invalid_utf8("x\x80"), 1u);              // lone continuation byte
}

}  // namespace
}  // namespace trainsim
