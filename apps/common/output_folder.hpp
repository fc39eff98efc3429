// An app's hold on its output folder (--out) for one run: the folder is made, locked
// against a second run, and cleared of the temporaries a killed run's writes left.
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
// Taken by each app's command line after --print-config and --print-keys have been
// answered (those write nothing) and, in a run of several processes, by the one that
// writes (the launcher's rank 0), before anything is written.
#pragma once

#include <stdexcept>
#include <string>

namespace qfleet::app {

// Another run holds the folder: "<out> is in use by another run (pid N)" (status 2).
struct OutputFolderInUse : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

class OutputFolder {
 public:
  // Makes `dir` (std::filesystem::filesystem_error naming it when it cannot be made),
  // takes its lock (OutputFolderInUse), then removes stale temporaries in it
  // (qfleet::remove_stale_temporaries: only qfleet's own pattern, only regular files).
  explicit OutputFolder(const std::string& dir);
  // Releases the lock. A folder this hold made that holds nothing but the lock file (a run
  // refused before it wrote, e.g. by its memory check) is removed, with the folders made
  // for it: such a run leaves nothing behind.
  ~OutputFolder();
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;

  static constexpr const char* kLockName = ".qfleet.lock";

 private:
  std::string dir_;
  std::string made_;  // the outermost folder the constructor made ("" when dir existed)
  int fd_ = -1;
};

}  // namespace qfleet::app
