// An app's hold on its output folder (output_folder.hpp).
#include "common/output_folder.hpp"

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <set>

#include "qfleet/files.hpp"

namespace qfleet::app {

namespace fs = std::filesystem;
using nlohmann::json;

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

// The entries under `dir` that `pattern` names (OutputFiles): its last name any entry but a
// folder, the names before it folders (never through a link); `folders` gets those folders.
void expand(const fs::path& dir, const std::vector<std::string>& names, std::size_t i, std::vector<fs::path>& found,
            std::set<fs::path>* folders) {
  const bool last = i + 1 == names.size();
  auto take = [&](const fs::path& p) {
    std::error_code ec;
    const auto st = fs::symlink_status(p, ec);
    if (ec || !fs::exists(st)) return;
    if (last) {
      if (!fs::is_directory(st)) found.push_back(p);
    } else if (fs::is_directory(st)) {
      if (folders) folders->insert(p);
      expand(p, names, i + 1, found, folders);
    }
  };
  if (names[i].find_first_of("*?[") == std::string::npos) return take(dir / names[i]);
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (::fnmatch(names[i].c_str(), it->path().filename().c_str(), FNM_PERIOD) == 0) take(it->path());
}

std::vector<fs::path> matching(const std::string& dir, const std::vector<std::string>& patterns,
                               std::set<fs::path>* folders = nullptr) {
  std::vector<fs::path> found;
  for (const auto& pattern : patterns) {
    std::vector<std::string> names;
    for (const auto& part : fs::path(pattern)) names.push_back(part.string());
    if (!names.empty()) expand(dir, names, 0, found, folders);
  }
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  return found;
}

// A value as a message shows it: strings as written, the rest as JSON, long ones cut.
std::string shown(const json* v) {
  if (v == nullptr) return "(unset)";
  std::string s = v->is_string() ? v->get<std::string>() : v->dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

// "iterations 3 -> 4, algorithm fomaml -> reptile": the keys whose values differ, the
// output key aside, at most four and how many more.
std::string differences(const json& was, const json& now, const std::string& skip) {
  std::set<std::string> keys;
  for (const auto* c : {&was, &now})
    for (const auto& [k, _] : c->items()) keys.insert(k);
  std::vector<std::string> out;
  for (const auto& k : keys) {
    if (k == skip) continue;
    const json* a = was.contains(k) ? &was[k] : nullptr;
    const json* b = now.contains(k) ? &now[k] : nullptr;
    if (a && b && *a == *b) continue;
    out.push_back(k + " " + shown(a) + " -> " + shown(b));
  }
  std::string text;
  for (std::size_t i = 0; i < out.size() && i < 4; ++i) text += (i ? ", " : "") + out[i];
  if (out.size() > 4) text += ", and " + std::to_string(out.size() - 4) + " more";
  return text;
}

// The refusal: what the folder holds, then the ways out.
std::string refusal(const std::string& dir, const RunClaim& c, const json& runs, const std::vector<fs::path>& found) {
  const std::string where = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  std::string what;
  bool ours = true;
  if (runs.contains(c.command)) {
    const std::string diff = differences(runs[c.command], c.config, c.output_key);
    what = diff.empty() ? "holds a run of this configuration" : "holds a run of another configuration (" + diff + ")";
  } else {
    std::string others;
    for (const auto& [k, _] : runs.items()) others += (others.empty() ? "" : ", ") + k;
    ours = others.empty();
    if (!ours) {
      what = "holds a run of " + others;
    } else {
      std::string names;
      for (std::size_t i = 0; i < found.size() && i < 3; ++i)
        names += (i ? ", " : "") + found[i].lexically_relative(dir).string();
      what = "holds an earlier run's results (" + names + (found.size() > 3 ? ", ..." : "") +
             ") whose configuration is not recorded";
    }
  }
  std::string ways;
  if (ours && !c.ways.resume.empty()) ways = c.ways.resume + " continues it, ";
  ways += c.ways.overwrite + " replaces it, or choose another " + c.ways.out;
  return where + " " + what + "; " + ways;
}

// The folder's record of its runs ({} when there is none or it cannot be read).
json read_runs(const fs::path& path, bool& exists, std::string& text) {
  std::error_code ec;
  exists = fs::is_regular_file(fs::symlink_status(path, ec));
  if (!exists) return json::object();
  try {
    text = read_file_bounded(path.string());
  } catch (const std::runtime_error&) {
    return json::object();
  }
  json j = json::parse(text, nullptr, false);
  return j.is_object() ? j : json::object();
}

}  // namespace

OutputFiles OutputFiles::under(const std::string& folder) const {
  OutputFiles o;
  for (const auto& r : results) o.results.push_back((fs::path(folder) / r).string());
  for (const auto& r : others) o.others.push_back((fs::path(folder) / r).string());
  return o;
}

OutputFiles& OutputFiles::add(const OutputFiles& more) {
  results.insert(results.end(), more.results.begin(), more.results.end());
  others.insert(others.end(), more.others.begin(), more.others.end());
  return *this;
}

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

OutputFolder::OutputFolder(const std::string& dir, const RunClaim& c) : OutputFolder(dir) {
  // (A throw from here on runs the destructor: the delegated constructor has finished.)
  claim(c);
}

void OutputFolder::claim(const RunClaim& c) {
  if (c.resume && c.overwrite)
    throw ConfigError(c.ways.resume + " and " + c.ways.overwrite +
                      " exclude each other: continue the run or replace it");
  const fs::path record = fs::path(dir_) / kRunsName;
  json runs = read_runs(record, had_record_, previous_);
  const auto found = matching(dir_, c.files.results);
  if (!found.empty() && !c.resume && !c.overwrite) throw OutputFolderTaken(refusal(dir_, c, runs, found));
  if (c.overwrite) {
    std::vector<std::string> all = c.files.results;
    all.insert(all.end(), c.files.others.begin(), c.files.others.end());
    std::set<fs::path> folders;
    for (const auto& p : matching(dir_, all, &folders)) fs::remove(p);  // (a link itself, never its target)
    for (auto it = folders.rbegin(); it != folders.rend(); ++it) {  // deepest first; only the empty ones go
      std::error_code ec;
      if (fs::is_empty(*it, ec) && !ec) fs::remove(*it, ec);
    }
  }
  runs[c.command] = c.config;
  write_file_atomic(record.string(), runs.dump(1) + "\n", dir_);
  recorded_ = true;
  resumed_ = c.resume;
  exceptions_ = std::uncaught_exceptions();
  results_ = c.files.results;
}

void OutputFolder::put_back_the_record() noexcept {
  const fs::path record = fs::path(dir_) / kRunsName;
  try {
    if (had_record_) {
      write_file_atomic(record.string(), previous_, dir_);
    } else {
      std::error_code ec;
      fs::remove(record, ec);
    }
  } catch (...) {  // (a record that stays describes the claim: the next refusal's wording only)
  }
}

OutputFolder::~OutputFolder() {
  if (fd_ < 0) return;
  if (recorded_) {
    const bool failed = std::uncaught_exceptions() > exceptions_;
    bool results = false;
    try {
      results = !matching(dir_, results_).empty();
    } catch (...) {
    }
    if (!results || (resumed_ && failed)) put_back_the_record();
  }
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
