// Safe file writes and bounded reads (qfleet/files.hpp).
#include "qfleet/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <stdexcept>

namespace qfleet {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kTemporaryMark = ".qfleet-";
constexpr std::size_t kTemporaryRandom = 6;

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

// Closes a descriptor when it goes out of scope.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  void reset(int f) {
    if (fd >= 0) ::close(fd);
    fd = f;
  }
};

// The folder of `path`, opened, with the folders that were missing created. Below `base`
// each folder is opened with O_NOFOLLOW, so a symbolic link among them is refused rather
// than followed; without a base, the folder's path is opened as the system resolves it.
int open_target_folder(const fs::path& p, const std::string& path, const std::string& base) {
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  fs::path start = dir, below;
  if (!base.empty()) {
    const fs::path rel = dir.lexically_normal().lexically_relative(fs::path(base).lexically_normal());
    if (rel.empty() || rel.is_absolute() || *rel.begin() == "..")
      throw std::runtime_error("cannot write " + path + ": it is not under " + base);
    start = base, below = rel;
  }
  std::error_code ec;
  fs::create_directories(start, ec);
  if (ec) throw std::runtime_error("cannot create the folder of " + path + ": " + ec.message());
  Fd dfd(::open(start.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dfd.fd < 0) fail("cannot write", path, errno);
  fs::path walked = start;
  for (const fs::path& part : below) {
    if (part == "." || part.empty()) continue;
    walked /= part;
    if (::mkdirat(dfd.fd, part.c_str(), 0755) != 0 && errno != EEXIST) fail("cannot create the folder", walked.string(), errno);
    const int next = ::openat(dfd.fd, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) {
      const int e = errno;
      struct stat st{};
      if (::fstatat(dfd.fd, part.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        throw std::runtime_error("cannot write " + path + ": " + walked.string() +
                                 " is a symbolic link (qfleet writes under its output folder through none)");
      fail("cannot write " + path + ": cannot open the folder", walked.string(), e);
    }
    dfd.reset(next);
  }
  const int out = dfd.fd;
  dfd.fd = -1;
  return out;
}

// A fresh temporary ".<name>.qfleet-XXXXXX" in the folder `dfd`, created 0600 with
// O_EXCL|O_NOFOLLOW (never an existing file or link); its name in `tmp`.
int make_temporary(int dfd, const std::string& name, std::string& tmp) {
  static constexpr char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng(std::random_device{}() ^ (std::uint64_t(::getpid()) << 32));
  for (int attempt = 0; attempt < 100; ++attempt) {
    tmp = "." + name;
    tmp += kTemporaryMark;
    for (std::size_t i = 0; i < kTemporaryRandom; ++i) tmp += kChars[rng() % (sizeof kChars - 1)];
    const int fd = ::openat(dfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

// What kind of file a mode is, for an error: "a character device".
const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a pipe";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

std::string size_text(std::size_t bytes) {
  if (bytes % (std::size_t(1) << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

// Reads `fd` to its end, refusing more than `max_bytes`.
std::string read_to_end(int fd, const std::string& name, std::size_t max_bytes, std::size_t hint) {
  std::string out;
  out.reserve(std::min(hint, max_bytes) + 1);
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot read", name, errno);
    }
    if (n == 0) return out;
    if (out.size() + std::size_t(n) > max_bytes)
      throw std::runtime_error("cannot read " + name + ": it holds more than " + size_text(max_bytes) +
                               ", the most qfleet reads from such a file");
    out.append(buf, std::size_t(n));
  }
}

}  // namespace

void write_file_atomic(const std::string& path, std::string_view bytes, const std::string& base) {
  const fs::path p(path);
  const std::string name = p.filename().string();
  Fd dfd(open_target_folder(p, path, base));
  std::string tmp;
  const int fd = make_temporary(dfd.fd, name, tmp);
  if (fd < 0) fail("cannot write", path, errno);
  auto abandon = [&](const std::string& what) {
    const int e = errno;
    ::close(fd);
    ::unlinkat(dfd.fd, tmp.c_str(), 0);
    fail(what, path, e);
  };
  // The temporary is made 0600; a report or checkpoint is read like any other file.
  if (::fchmod(fd, 0644) != 0) abandon("cannot write");
  if (!write_all(fd, bytes)) abandon("cannot write");
  if (::fsync(fd) != 0) abandon("cannot write");
  if (::close(fd) != 0) {
    const int e = errno;
    ::unlinkat(dfd.fd, tmp.c_str(), 0);
    fail("cannot write", path, e);
  }
  if (::renameat(dfd.fd, tmp.c_str(), dfd.fd, name.c_str()) != 0) {
    const int e = errno;
    ::unlinkat(dfd.fd, tmp.c_str(), 0);
    fail("cannot replace", path, e);
  }
  // The rename itself on the disk: the folder's entry (a failure here loses nothing written).
  (void)::fsync(dfd.fd);
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

namespace {

// A folder or a device is refused by name; a pipe or socket is read (bounded) like a file.
void refuse_kind(const std::string& path, mode_t m) {
  if (S_ISDIR(m)) throw std::runtime_error("cannot read " + path + ": it is a directory");
  if (!S_ISREG(m) && !S_ISFIFO(m) && !S_ISSOCK(m))
    throw std::runtime_error("cannot read " + path + ": it is " + kind_of(m) + ", not a regular file");
}

}  // namespace

std::string read_file_bounded(const std::string& path, std::size_t max_bytes) {
  // Checked before opening too: opening some devices has effects (a tape rewinds, a
  // terminal becomes the controlling one).
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0) refuse_kind(path, st.st_mode);
  Fd fd(::open(path.c_str(), O_RDONLY | O_NOCTTY | O_CLOEXEC));
  if (fd.fd < 0) fail("cannot open", path, errno);
  if (::fstat(fd.fd, &st) != 0) fail("cannot read", path, errno);
  refuse_kind(path, st.st_mode);  // (what was opened, should the name have changed meanwhile)
  if (S_ISREG(st.st_mode) && std::size_t(st.st_size) > max_bytes)
    throw std::runtime_error("cannot read " + path + ": it holds " + std::to_string(st.st_size) + " bytes, more than " +
                             size_text(max_bytes) + ", the most qfleet reads from such a file");
  // Bounded again as it is read: a file may grow meanwhile, and a pipe has no size.
  return read_to_end(fd.fd, path, max_bytes, S_ISREG(st.st_mode) ? std::size_t(st.st_size) : std::size_t(1) << 16);
}

std::string read_stream_bounded(int fd, const std::string& name, std::size_t max_bytes) {
  return read_to_end(fd, name, max_bytes, 1 << 16);
}

bool is_temporary_name(std::string_view name) {
  // 6 random characters from write_file_atomic, 8 from Python's tempfile.mkstemp (qfleet/_files.py).
  const std::size_t at = name.rfind(kTemporaryMark);
  if (name.empty() || name[0] != '.' || at == std::string_view::npos || at == 0) return false;
  const std::string_view tail = name.substr(at + kTemporaryMark.size());
  if (tail.size() < kTemporaryRandom || tail.size() > kTemporaryRandom + 2) return false;
  for (const char c : tail)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

std::size_t remove_stale_temporaries(const std::string& dir) {
  std::size_t removed = 0;
  std::error_code ec;
  // (a recursive iterator does not descend into a linked folder unless asked to)
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!is_temporary_name(it->path().filename().string())) continue;
    std::error_code sec;
    if (!fs::is_regular_file(it->symlink_status(sec)) || sec) continue;
    if (::unlink(it->path().c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace qfleet
