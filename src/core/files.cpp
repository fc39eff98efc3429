// Safe file writes (qfleet/files.hpp).
#include "qfleet/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

namespace qfleet {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
  throw std::runtime_error(what + " " + path + ": " + std::strerror(err));
}

// Writes all of `bytes`; false (errno set) on failure.
bool write_all(int fd, std::string_view bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += std::size_t(n);
  }
  return true;
}

}  // namespace

void write_file_atomic(const std::string& path, std::string_view bytes) {
  const fs::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  if (ec) throw std::runtime_error("cannot create the folder of " + path + ": " + ec.message());
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::string hidden = ".";  // ".<name>.XXXXXX" in the target's folder (appended: GCC 12 warns on a + chain here)
  hidden.append(p.filename().string()).append(".XXXXXX");
  const std::string tmpl = (dir / hidden).string();
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) fail("cannot write", path, errno);
  const std::string tmp(name.data());
  auto abandon = [&](const std::string& what) {
    const int e = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    fail(what, path, e);
  };
  // mkstemp makes the file 0600; a report or checkpoint is read like any other file.
  if (::fchmod(fd, 0644) != 0) abandon("cannot write");
  if (!write_all(fd, bytes)) abandon("cannot write");
  if (::fsync(fd) != 0) abandon("cannot write");
  if (::close(fd) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    fail("cannot write", path, e);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    fail("cannot replace", path, e);
  }
  // The rename itself on the disk: the folder's entry (a failure here loses nothing written).
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

void append_to_file(const std::string& path, std::string_view bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) fail(errno == ELOOP ? "refusing to write through the symbolic link" : "cannot append to", path, errno);
  if (!write_all(fd, bytes)) {
    const int e = errno;
    ::close(fd);
    fail("cannot append to", path, e);
  }
  if (::close(fd) != 0) fail("cannot append to", path, errno);
}

}  // namespace qfleet
