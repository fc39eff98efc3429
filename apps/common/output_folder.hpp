// An app's hold on its output folder (--out) for one run: the folder is made, locked
// against a second run, and cleared of the temporaries a killed run's writes left; and,
// for a run that says what it writes (RunClaim), kept from replacing another run's results.
//
// Two runs into one folder would both write checkpoint.pt and interleave train_log.jsonl
// (each append is whole, but the rows of two runs alternate) and the report of one would
// describe the other's checkpoint. The lock is an advisory flock on `<out>/.qfleet.lock`,
// opened with O_NOFOLLOW (a link planted there is refused) and held until the process
// ends, however it ends (the kernel releases it with the last descriptor: a killed run
// leaves no lock behind, only the file, which the next run reuses). The file holds the
// holder's pid, which a refused run names. Only qfleet's runs honour it: it does not stop
// another program from writing there.
//
// One run after another into one folder replaced the first's report, checkpoint and pulses
// without a word. A claimed folder that holds a result of the command (a file its
// OutputFiles::results name) is refused, whatever the configuration, unless the run resumes
// (the app's checkpoint then decides what may change) or overwrites (the command's files,
// results and others, are removed first: nothing else in the folder is touched). The
// message says how the configurations differ: `<out>/.qfleet-runs.json` records each
// command's resolved configuration (an object, command -> configuration), written once the
// claim is granted; a claim that leaves no result (refused by its memory check, say) or a
// resume that fails puts the record back as it was.
//
// Taken by each app's command line after --print-config and --print-keys have been
// answered (those write nothing) and, in a run of several processes, by the one that
// writes (the launcher's rank 0), before anything is written.
#pragma once

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "common/config.hpp"

namespace qfleet::app {

// Another run holds the folder: "<out> is in use by another run (pid N)" (status 2).
struct OutputFolderInUse : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// The folder holds results a run would replace (status 2; ValueError from Python):
// "o1/ holds a run of another configuration (iterations 3 -> 4); --resume continues it, ...".
struct OutputFolderTaken : ConfigError {
  using ConfigError::ConfigError;
};

// What a command writes into its output folder, as paths relative to it; '*' matches
// within one name and not a leading dot ("eval/meta_adapted*.json", "shots_*/checkpoint.pt").
struct OutputFiles {
  std::vector<std::string> results;  // any of them present: the folder holds a run of the command
  std::vector<std::string> others;   // written too (the log, the figures): removed with them by an overwrite

  // The same files under `folder` ("qgan" + "report.json" -> "qgan/report.json").
  OutputFiles under(const std::string& folder) const;
  OutputFiles& add(const OutputFiles& more);
};

// How a refusal names the ways out, as the entry point that was called spells them.
struct Ways {
  std::string resume = "--resume";  // "" where the command cannot resume
  std::string overwrite = "--overwrite";
  std::string out = "--out";
};

// A run's claim on its folder.
struct RunClaim {
  std::string command;     // what the folder records the run as: "qfleet-meta", "qfleet-qgan train"
  nlohmann::json config;   // the resolved configuration (flat keys), recorded and compared
  std::string output_key;  // the configuration's key naming the folder: not compared (a folder may move)
  OutputFiles files;
  bool resume = false, overwrite = false;
  Ways ways;
};

class OutputFolder {
 public:
  // Makes `dir` (std::filesystem::filesystem_error naming it when it cannot be made),
  // takes its lock (OutputFolderInUse), then removes stale temporaries in it
  // (qfleet::remove_stale_temporaries: only qfleet's own pattern, only regular files).
  explicit OutputFolder(const std::string& dir);
  // The same, then the claim (above): OutputFolderTaken where the folder holds a result of
  // claim.command and the claim neither resumes nor overwrites; ConfigError for both at once.
  OutputFolder(const std::string& dir, const RunClaim& claim);
  // Releases the lock. A folder this hold made that holds nothing but the lock file (a run
  // refused before it wrote, e.g. by its memory check) is removed, with the folders made
  // for it: such a run leaves nothing behind.
  ~OutputFolder();
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;

  static constexpr const char* kLockName = ".qfleet.lock";
  static constexpr const char* kRunsName = ".qfleet-runs.json";

 private:
  void claim(const RunClaim& claim);
  void put_back_the_record() noexcept;

  std::string dir_;
  std::string made_;  // the outermost folder the constructor made ("" when dir existed)
  int fd_ = -1;
  // The claim's record, to put back (previous_ "": there was none) where the run leaves no result.
  bool recorded_ = false, resumed_ = false, had_record_ = false;
  int exceptions_ = 0;  // std::uncaught_exceptions() when the claim was granted
  std::string previous_;
  std::vector<std::string> results_;
};

}  // namespace qfleet::app
