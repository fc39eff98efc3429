// ProgressBar, clock_text and write_file_atomic (qfleet/train.hpp; the writer is qfleet/files.hpp).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "qfleet/files.hpp"
#include "qfleet/train.hpp"

namespace qfleet::train {

std::string clock_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  const long t = std::lround(seconds);
  char buf[32];
  if (t >= 3600) {
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%02ld:%02ld", t / 60, t % 60);
  }
  return buf;
}

ProgressBar::ProgressBar() : tty_(isatty(STDERR_FILENO) != 0), t0_(std::chrono::steady_clock::now()) {}

void ProgressBar::update(int64_t done, int64_t total, const std::string& note) {
  if (first_ < 0) first_ = done - 1;
  const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  const double rate = el / double(done - first_ > 0 ? done - first_ : 1);
  const double eta = rate * double(total - done);
  const int pct = total > 0 ? int(100 * done / total) : 100;
  if (!tty_) {  // logs and CI: one line per 10%
    if (pct / 10 == last_decile_ && done != total) return;
    last_decile_ = pct / 10;
  } else if (el - last_draw_ < 0.1 && done != total) {
    return;
  }
  last_draw_ = el;
  const int width = 30, filled = width * pct / 100;
  std::fprintf(stderr, "%s[%s%s] %lld/%lld %3d%% %s<%s %s%s", tty_ ? "\r" : "", std::string(filled, '#').c_str(),
               std::string(width - filled, '.').c_str(), (long long)done, (long long)total, pct,
               clock_text(el).c_str(), clock_text(eta).c_str(), note.c_str(), tty_ ? "" : "\n");
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (tty_) std::fprintf(stderr, "\n");
}

void write_file_atomic(const std::string& path, const std::string& text) { qfleet::write_file_atomic(path, text); }

}  // namespace qfleet::train
