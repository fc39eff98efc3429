// An app's hold on its output folder (output_folder.hpp).
#include "common/output_folder.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "qfleet/files.hpp"

namespace qfleet::app {

namespace fs = std::filesystem;

namespace {

// The pid a holder wrote into the lock file ("?" when it has not yet).
std::string holder_of(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string pid;
  for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; ++i) pid += buf[i];
  return pid.empty() ? "?" : pid;
}

// Whether the folder's one entry is the lock file (nothing written besides).
bool holds_only_the_lock(const std::string& dir) {
  std::error_code ec;
  std::size_t entries = 0;
  bool lock = false;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    ++entries;
    lock = lock || it->path().filename() == OutputFolder::kLockName;
  }
  return !ec && entries == 1 && lock;
}

}  // namespace

OutputFolder::OutputFolder(const std::string& dir) : dir_(dir) {
  std::error_code ec;
  for (fs::path p = dir; !p.empty() && !fs::exists(fs::symlink_status(p, ec)); p = p.parent_path()) made_ = p.string();
  fs::create_directories(dir);  // (throws filesystem_error naming the path and the reason)
  const std::string lock = (fs::path(dir) / kLockName).string();
  fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const int e = errno;
    throw std::runtime_error(std::string(e == ELOOP ? "refusing the symbolic link " : "cannot open the lock file ") + lock +
                             ": " + std::strerror(e));
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    const std::string pid = e == EWOULDBLOCK ? holder_of(fd_) : "";
    ::close(fd_);
    fd_ = -1;
    if (e == EWOULDBLOCK) throw OutputFolderInUse(dir + " is in use by another run (pid " + pid + ")");
    throw std::runtime_error("cannot lock " + lock + ": " + std::strerror(e));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != ssize_t(pid.size())) {
    // The lock holds without the pid; a refused run then names "pid ?".
  }
  remove_stale_temporaries(dir);
}

OutputFolder::~OutputFolder() {
  if (fd_ < 0) return;
  if (!made_.empty() && holds_only_the_lock(dir_)) {
    // Removed while still held: a run that opened it meanwhile has already been refused.
    std::error_code ec;
    fs::remove(fs::path(dir_) / kLockName, ec);
    for (fs::path p = dir_; !ec && fs::remove(p, ec); p = p.parent_path())
      if (p == fs::path(made_)) break;
  }
  ::close(fd_);
}

}  // namespace qfleet::app
