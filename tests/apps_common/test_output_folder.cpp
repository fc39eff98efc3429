// A run's claim on its output folder (apps/common/output_folder.hpp): a folder holding a result
// of the command is refused unless the claim resumes or overwrites; an overwrite removes the
// command's files only (by their patterns, never through a link, folders only once emptied);
// the record of the folder's runs is put back where a claim leaves no result. The apps' own
// runs of it: tests/python/test_output_folders.py.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "common/output_folder.hpp"

namespace qfleet::app {
namespace {

namespace fs = std::filesystem;

fs::path fresh(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("qfleet_output_folder_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(p);
  return p;
}

void put(const fs::path& p, const std::string& text = "x") {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

std::string text_of(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

RunClaim claim(int epochs) {
  RunClaim c;
  c.command = "app run";
  c.config = {{"epochs", epochs}, {"out", "ignored"}, {"seed", 1}};
  c.output_key = "out";
  c.files = {{"report.json", "eval/task_*.json", "shots_*/checkpoint.pt"}, {"log.jsonl", "*.png"}};
  return c;
}

TEST(OutputFolder, AFolderWithoutAResultIsTakenAndRecordsTheConfiguration) {
  const fs::path dir = fresh("taken");
  put(dir / "notes.txt");
  put(dir / "log.jsonl");  // (a log alone is no result: a run killed before it wrote one)
  {
    const OutputFolder held(dir.string(), claim(3));
    put(dir / "report.json");
  }
  const auto runs = nlohmann::json::parse(text_of(dir / OutputFolder::kRunsName));
  EXPECT_EQ(runs["app run"]["epochs"], 3);
  fs::remove_all(dir);
}

TEST(OutputFolder, ASecondClaimIsRefusedSayingHowTheConfigurationsDiffer) {
  const fs::path dir = fresh("refused");
  {
    const OutputFolder held(dir.string(), claim(3));
    put(dir / "shots_8" / "checkpoint.pt");
  }
  const std::string record = text_of(dir / OutputFolder::kRunsName);
  RunClaim c = claim(4);
  c.config["out"] = "elsewhere";  // (the folder's own key is not compared)
  try {
    const OutputFolder held(dir.string(), c);
    ADD_FAILURE() << "a second run was let in";
  } catch (const OutputFolderTaken& e) {
    EXPECT_EQ(std::string(e.what()), dir.string() + "/ holds a run of another configuration (epochs 3 -> 4); --resume "
                                                    "continues it, --overwrite replaces it, or choose another --out");
  }
  c = claim(3);
  c.ways = {"", "overwrite=True", "output_dir"};
  try {
    const OutputFolder held(dir.string(), c);
    ADD_FAILURE() << "the same run again was let in";
  } catch (const OutputFolderTaken& e) {
    EXPECT_EQ(std::string(e.what()), dir.string() + "/ holds a run of this configuration; overwrite=True replaces it, "
                                                    "or choose another output_dir");
  }
  c = claim(3);
  c.resume = c.overwrite = true;
  EXPECT_THROW(OutputFolder(dir.string(), c), ConfigError);
  EXPECT_EQ(text_of(dir / OutputFolder::kRunsName), record);
  fs::remove_all(dir);
}

TEST(OutputFolder, AnOverwriteRemovesTheCommandsFilesAndNothingElse) {
  const fs::path dir = fresh("overwrite"), victim = fresh("victim");
  put(victim, "keep me");
  put(dir / "report.json");
  put(dir / "eval" / "task_0.json");
  put(dir / "eval" / "mine.txt");                  // the user's, in a folder of the app's
  put(dir / ".figure.png");                        // '*' does not match a leading dot
  put(dir / "shots_8" / "checkpoint.pt");          // its folder goes once emptied
  put(dir / "figure.png");
  put(dir / "notes.txt");
  fs::create_directory_symlink(victim.parent_path(), dir / "shots_9");  // never followed
  fs::create_symlink(victim, dir / "log.jsonl");   // the link goes, not its target
  RunClaim c = claim(5);
  c.overwrite = true;
  {
    const OutputFolder held(dir.string(), c);
    for (const char* gone : {"report.json", "eval/task_0.json", "shots_8", "figure.png", "log.jsonl"})
      EXPECT_FALSE(fs::exists(fs::symlink_status(dir / gone))) << gone;
    for (const char* kept : {"eval/mine.txt", ".figure.png", "notes.txt", "shots_9"})
      EXPECT_TRUE(fs::exists(fs::symlink_status(dir / kept))) << kept;
    EXPECT_EQ(text_of(victim), "keep me");
    put(dir / "report.json");
  }
  EXPECT_EQ(nlohmann::json::parse(text_of(dir / OutputFolder::kRunsName))["app run"]["epochs"], 5);
  fs::remove_all(dir);
  fs::remove(victim);
}

TEST(OutputFolder, AClaimThatLeavesNoResultOrAFailedResumePutsTheRecordBack) {
  const fs::path made = fresh("made");
  { const OutputFolder held((made / "sub").string(), claim(1)); }  // refused later, say, by its memory check
  EXPECT_FALSE(fs::exists(made)) << "a run that wrote nothing left its folder";

  const fs::path dir = fresh("put_back");
  {
    const OutputFolder held(dir.string(), claim(1));
    put(dir / "report.json");
  }
  const std::string record = text_of(dir / OutputFolder::kRunsName);
  RunClaim c = claim(2);
  c.resume = true;
  try {
    const OutputFolder held(dir.string(), c);
    EXPECT_NE(text_of(dir / OutputFolder::kRunsName), record);
    throw std::invalid_argument("resume: the checkpoint's configuration differs");
  } catch (const std::invalid_argument&) {
  }
  EXPECT_EQ(text_of(dir / OutputFolder::kRunsName), record);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace qfleet::app
