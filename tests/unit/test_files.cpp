// qfleet::write_file_atomic and append_to_file (qfleet/files.hpp): a planted symbolic link
// never redirects a write, a failed write leaves no temporary behind, the old file or the
// whole new one is there.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "qfleet/files.hpp"

namespace files_tests {
namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("qfleet_files_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::size_t entries(const fs::path& d) {
  return std::size_t(std::distance(fs::directory_iterator(d), fs::directory_iterator()));
}

TEST(Files, AWriteReplacesAPlantedLinkInsteadOfFollowingIt) {
  const fs::path d = fresh_dir("link");
  std::ofstream(d / "victim") << "keep me";
  fs::create_symlink(d / "victim", d / "report.json");
  fs::create_symlink(d / "victim", d / "report.json.tmp");  // the name a predictable temporary would have had
  qfleet::write_file_atomic((d / "report.json").string(), "new");
  EXPECT_EQ(read(d / "victim"), "keep me");
  EXPECT_FALSE(fs::is_symlink(d / "report.json"));
  EXPECT_EQ(read(d / "report.json"), "new");
  EXPECT_EQ(entries(d), 3u);  // victim, report.json, the planted report.json.tmp: no temporary left
  EXPECT_EQ(fs::status(d / "report.json").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
  fs::remove_all(d);
}

TEST(Files, AFailedWriteLeavesTheOldFileAndNoTemporary) {
  const fs::path d = fresh_dir("fail");
  fs::create_directories(d / "taken");  // a folder where the file should go: the rename fails
  std::ofstream(d / "taken" / "inside") << "x";
  try {
    qfleet::write_file_atomic((d / "taken").string(), "new");
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find((d / "taken").string()), std::string::npos) << e.what();
  }
  EXPECT_EQ(entries(d), 1u);
  EXPECT_TRUE(fs::is_directory(d / "taken"));
  // Nested folders are created; a second write replaces the first whole.
  qfleet::write_file_atomic((d / "a" / "b" / "f").string(), "first");
  qfleet::write_file_atomic((d / "a" / "b" / "f").string(), "2");
  EXPECT_EQ(read(d / "a" / "b" / "f"), "2");
  EXPECT_EQ(entries(d / "a" / "b"), 1u);
  fs::remove_all(d);
}

TEST(Files, AnAppendRefusesASymbolicLink) {
  const fs::path d = fresh_dir("append");
  qfleet::append_to_file((d / "log").string(), "a\n");
  qfleet::append_to_file((d / "log").string(), "b\n");
  EXPECT_EQ(read(d / "log"), "a\nb\n");
  std::ofstream(d / "victim") << "keep me";
  fs::create_symlink(d / "victim", d / "train_log.jsonl");
  try {
    qfleet::append_to_file((d / "train_log.jsonl").string(), "row\n");
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read(d / "victim"), "keep me");
  fs::remove_all(d);
}

}  // namespace files_tests
