#include "common/output_file.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace cky {
namespace {

namespace fs = std::filesystem;

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("cky_output_file_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  static std::string Read(const fs::path& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  fs::path dir_;
};

Status WriteText(std::ostream& out, const std::string& text) {
  out << text;
  return Status();
}

TEST_F(OutputFileTest, WritesAndReplacesWithTheUsualPermissions) {
  const std::string path = (dir_ / "out.txt").string();
  ASSERT_TRUE(
      WriteFileAtomically(path, [](std::ostream& out) { return WriteText(out, "one\n"); }).ok());
  EXPECT_EQ(Read(path), "one\n");
  ASSERT_TRUE(
      WriteFileAtomically(path, [](std::ostream& out) { return WriteText(out, "two\n"); }).ok());
  EXPECT_EQ(Read(path), "two\n");
  const mode_t mask = ::umask(0);
  ::umask(mask);
  EXPECT_EQ(static_cast<mode_t>(fs::status(path).permissions()), 0666 & ~mask);
  // Private files stay private whatever the umask.
  ASSERT_TRUE(WriteFileAtomically(path, [](std::ostream& out) { return WriteText(out, "three\n"); },
                                  {.mode = 0600, .apply_umask = false})
                  .ok());
  EXPECT_EQ(static_cast<mode_t>(fs::status(path).permissions()), 0600u);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(OutputFileTest, AFailedWriteLeavesTheOldFileAndNoTemporaryOne) {
  const std::string path = (dir_ / "out.txt").string();
  ASSERT_TRUE(
      WriteFileAtomically(path, [](std::ostream& out) { return WriteText(out, "old\n"); }).ok());
  const Status failed = WriteFileAtomically(path, [](std::ostream& out) {
    out << "half";
    return Status::Error("the writer gave up");
  });
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.message(), "the writer gave up");
  EXPECT_EQ(Read(path), "old\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
  // Over the file-size limit (a full disk behaves the same): an error with errno's reason.
  auto child = [&] {
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{1000, 1000};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    const Status status = WriteFileAtomically(
        path, [](std::ostream& out) { return WriteText(out, std::string(100000, 'x')); });
    const bool clean = std::distance(fs::directory_iterator(dir_), fs::directory_iterator()) == 1;
    std::exit(!status.ok() && status.message().find("File too large") != std::string::npos &&
                      clean && Read(path) == "old\n"
                  ? 0
                  : 1);
  };
  EXPECT_EXIT(child(), ::testing::ExitedWithCode(0), "");
}

TEST_F(OutputFileTest, ErrorsSayWhy) {
  const Status status = WriteFileAtomically((dir_ / "missing" / "out.txt").string(),
                                            [](std::ostream&) { return Status(); });
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("missing/out.txt: cannot open for writing: No such file"),
            std::string::npos)
      << status.message();
}

TEST_F(OutputFileTest, ADeviceIsWrittenDirectly) {
  EXPECT_TRUE(
      WriteFileAtomically("/dev/null", [](std::ostream& out) { return WriteText(out, "x"); }).ok());
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

}  // namespace
}  // namespace cky
