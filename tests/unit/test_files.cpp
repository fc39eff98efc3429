// qfleet::write_file_atomic and append_to_file (qfleet/files.hpp): a planted symbolic link
// never redirects a write (at the target, or as a folder below the output folder), a failed
// write leaves no temporary behind, the old file or the whole new one is there; the bounded
// reader refuses devices, folders and long files, and reads a pipe up to its limit; stale
// temporaries are found by their name.
#include <gtest/gtest.h>

#include <sys/stat.h>
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

TEST(Files, AWriteBelowItsBaseRefusesALinkedFolder) {
  const fs::path d = fresh_dir("base");
  fs::create_directories(d / "out");
  fs::create_directories(d / "elsewhere");
  fs::create_directory_symlink(d / "elsewhere", d / "out" / "linkdir");
  try {
    qfleet::write_file_atomic((d / "out" / "linkdir" / "r.npy").string(), "new", (d / "out").string());
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find((d / "out" / "linkdir").string() + " is a symbolic link"), std::string::npos) << w;
    EXPECT_EQ(w.find('\n'), std::string::npos) << w;
  }
  fs::create_directories(d / "out" / "real");
  fs::create_directory_symlink(d / "elsewhere", d / "out" / "real" / "deeper");
  EXPECT_THROW(qfleet::write_file_atomic((d / "out" / "real" / "deeper" / "x" / "f").string(), "new", (d / "out").string()),
               std::runtime_error);
  EXPECT_EQ(entries(d / "elsewhere"), 0u);
  // Folders below the base are made; the base itself may be a link (the user named it).
  fs::create_directory_symlink(d / "out", d / "outlink");
  qfleet::write_file_atomic((d / "outlink" / "a" / "b" / "f").string(), "ok", (d / "outlink").string());
  EXPECT_EQ(read(d / "out" / "a" / "b" / "f"), "ok");
  EXPECT_THROW(qfleet::write_file_atomic((d / "f").string(), "x", (d / "out").string()), std::runtime_error);
  fs::remove_all(d);
}

std::string read_error(const std::string& path, std::size_t max_bytes = qfleet::kMaxTextFileBytes) {
  try {
    qfleet::read_file_bounded(path, max_bytes);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(Files, TheBoundedReaderRefusesDevicesPipesFoldersAndLongFiles) {
  const fs::path d = fresh_dir("read");
  std::ofstream(d / "small") << "{\"a\": 1}";
  EXPECT_EQ(qfleet::read_file_bounded((d / "small").string()), "{\"a\": 1}");
  EXPECT_EQ(read_error("/dev/zero"), "cannot read /dev/zero: it is a character device, not a regular file");
  EXPECT_EQ(read_error(d.string()), "cannot read " + d.string() + ": it is a directory");
  EXPECT_EQ(read_error("/dev/urandom"), "cannot read /dev/urandom: it is a character device, not a regular file");
  // A pipe (`qfleet eval /dev/stdin`, `<(...)`) is read to its end, up to the limit.
  int ends[2];
  ASSERT_EQ(::pipe(ends), 0);
  ASSERT_EQ(::write(ends[1], std::string(5000, 'p').data(), 5000), 5000);
  ::close(ends[1]);
  const std::string pipe = "/proc/self/fd/" + std::to_string(ends[0]);
  EXPECT_EQ(read_error(pipe, 4096), "cannot read " + pipe + ": it holds more than 4096 bytes, the most qfleet reads from "
                                    "such a file");
  ::close(ends[0]);
  ASSERT_EQ(::pipe(ends), 0);
  ASSERT_EQ(::write(ends[1], "{}", 2), 2);
  ::close(ends[1]);
  EXPECT_EQ(qfleet::read_file_bounded("/proc/self/fd/" + std::to_string(ends[0])), "{}");
  ::close(ends[0]);
  std::ofstream(d / "long") << std::string(4096, 'x');
  EXPECT_EQ(read_error((d / "long").string(), 4095),
            "cannot read " + (d / "long").string() + ": it holds 4096 bytes, more than 4095 bytes, the most qfleet reads from "
            "such a file");
  EXPECT_EQ(qfleet::read_file_bounded((d / "long").string(), 4096).size(), 4096u);
  EXPECT_NE(read_error((d / "missing").string()).find("cannot open"), std::string::npos);
  fs::remove_all(d);
}

TEST(Files, StaleTemporariesAreRemovedByTheirNameOnly) {
  const fs::path d = fresh_dir("stale");
  fs::create_directories(d / "eval");
  std::ofstream(d / ".checkpoint.pt.qfleet-AbC123") << "cut short";
  std::ofstream(d / "eval" / ".task_0.json.qfleet-x_9abcde") << "cut short";  // Python's 8 characters
  std::ofstream(d / ".notes.md.backup") << "the user's";
  std::ofstream(d / "checkpoint.pt") << "whole";
  std::ofstream(d / "victim") << "keep me";
  fs::create_symlink(d / "victim", d / ".report.json.qfleet-Zz9Zz9");
  const fs::path elsewhere = fresh_dir("stale_elsewhere");
  std::ofstream(elsewhere / ".r.qfleet-AAAAAA") << "not under the folder";
  fs::create_directory_symlink(elsewhere, d / "eval" / "linked");
  EXPECT_TRUE(qfleet::is_temporary_name(".checkpoint.pt.qfleet-AbC123"));
  EXPECT_FALSE(qfleet::is_temporary_name("checkpoint.pt.qfleet-AbC123"));
  EXPECT_FALSE(qfleet::is_temporary_name(".checkpoint.pt.qfleet-AbC"));
  EXPECT_EQ(qfleet::remove_stale_temporaries(d.string()), 2u);
  EXPECT_FALSE(fs::exists(d / ".checkpoint.pt.qfleet-AbC123"));
  EXPECT_FALSE(fs::exists(d / "eval" / ".task_0.json.qfleet-x_9abcde"));
  EXPECT_TRUE(fs::exists(d / ".notes.md.backup"));
  EXPECT_TRUE(fs::is_symlink(d / ".report.json.qfleet-Zz9Zz9"));
  EXPECT_TRUE(fs::exists(elsewhere / ".r.qfleet-AAAAAA"));
  EXPECT_EQ(read(d / "victim"), "keep me");
  // A write's own temporary has that name: a write cut short leaves one the next run removes.
  qfleet::write_file_atomic((d / "eval" / "f.json").string(), "{}");
  EXPECT_EQ(entries(d / "eval"), 2u);  // f.json, the link: no temporary
  fs::remove_all(d);
  fs::remove_all(elsewhere);
}

}  // namespace files_tests
