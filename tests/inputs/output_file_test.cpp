// The one output path: regular files are replaced atomically, everything else is written in
// place and never replaced; every failure names the path and leaves no temporary file.
#include "inputs/output_file.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/error.h"

namespace trainsim {
namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("trainsim_output_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const char* name) const { return (dir_ / name).string(); }
  // Names in the folder, so a test sees any temporary file left behind.
  std::vector<std::string> listing() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  fs::path dir_;
};

TEST_F(OutputFileTest, ReplacesARegularFileKeepingItsMode) {
  std::ofstream(path("out.csv")) << "old";
  fs::permissions(path("out.csv"), fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  write_file_atomic(path("out.csv"), "new");
  EXPECT_EQ(slurp(path("out.csv")), "new");
  EXPECT_EQ(fs::status(path("out.csv")).permissions(),
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  EXPECT_EQ(listing(), std::vector<std::string>{"out.csv"});
}

// Before: rename() replaced the symbolic link itself with a regular file.
TEST_F(OutputFileTest, SymlinkKeepsPointingAtTheUpdatedFile) {
  fs::create_directories(dir_ / "real");
  std::ofstream(path("real/data.json")) << "old";
  fs::create_symlink(dir_ / "real" / "data.json", dir_ / "link.json");
  write_file_atomic(path("link.json"), "new");
  EXPECT_TRUE(fs::is_symlink(path("link.json")));
  EXPECT_EQ(slurp(path("real/data.json")), "new");
  EXPECT_EQ(listing(), (std::vector<std::string>{"link.json", "real"}));
}

TEST_F(OutputFileTest, DanglingSymlinkIsRefused) {
  fs::create_symlink(dir_ / "nowhere.json", dir_ / "link.json");
  try {
    write_file_atomic(path("link.json"), "x");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path("link.json") + ": cannot write: symbolic link to a missing file (No such file or directory)");
  }
  EXPECT_FALSE(fs::exists(dir_ / "nowhere.json"));
}

// Before: the temporary file was renamed over the FIFO, turning it into a regular file.
TEST_F(OutputFileTest, FifoIsWrittenInPlaceAndStaysAFifo) {
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = slurp(path("fifo")); });
  write_file_atomic(path("fifo"), "rows\n");
  reader.join();
  EXPECT_EQ(got, "rows\n");
  EXPECT_TRUE(fs::is_fifo(path("fifo")));
  EXPECT_EQ(listing(), std::vector<std::string>{"fifo"});
}

// Before: `--csv /dev/full` exited 0 (and as root turned /dev/full into a regular file).
TEST_F(OutputFileTest, WriteErrorOnADeviceIsReportedAndTheDeviceStays) {
  try {
    write_file_atomic("/dev/full", "x");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "/dev/full: cannot write: No space left on device");
  }
  EXPECT_TRUE(fs::is_character_file("/dev/full"));
}

TEST_F(OutputFileTest, UncommittedOrFailedOutputLeavesTheTargetAndNoTemporaryFile) {
  std::ofstream(path("out.csv")) << "old";
  {
    OutputFile f(path("out.csv"));
    f.write("half");
    EXPECT_EQ(listing().size(), 2u);  // the target and the hidden temporary file
  }  // destroyed without commit(), as when an exception unwinds
  EXPECT_EQ(slurp(path("out.csv")), "old");
  EXPECT_EQ(listing(), std::vector<std::string>{"out.csv"});
  try {
    write_file_atomic(dir_.string(), "x");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), dir_.string() + ": cannot write: is a directory");
  }
  try {
    write_file_atomic(path("missing/out.csv"), "x");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path("missing/out.csv") + ": cannot write: No such file or directory");
  }
}

TEST_F(OutputFileTest, TemporaryNamesAreUnpredictable) {
  OutputFile a(path("out.csv")), b(path("out.csv"));
  std::vector<std::string> names = listing();
  ASSERT_EQ(names.size(), 2u);
  EXPECT_NE(names[0], names[1]);
  EXPECT_EQ(names[0].rfind(".out.csv.", 0), 0u);
  EXPECT_EQ(names[0].find(std::to_string(::getpid())), std::string::npos);
}

}  // namespace
}  // namespace trainsim
