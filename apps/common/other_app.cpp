// Another qfleet app as a separate program (other_app.hpp).
#include "common/other_app.hpp"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "qfleet/train.hpp"

namespace qfleet::app {

namespace fs = std::filesystem;

std::vector<std::string> other_app_command(const OtherApp& other) {
  if (const char* given = std::getenv(other.env); given != nullptr && *given != '\0') return {given};
  const std::vector<std::string> own = train::own_command_line();
  // The interpreter as it was named, not /proc/self/exe: a virtual environment's python
  // is a link to the base interpreter, which would not see the environment's packages.
  if (own.size() >= 3 && own[1] == "-m" && own[2].rfind("qfleet.", 0) == 0) return {own[0], "-m", other.module};
  std::error_code ec;
  const fs::path dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  if (!ec) {
    for (const fs::path& p : {dir / other.binary, dir.parent_path() / other.build_dir / other.binary})
      if (fs::is_regular_file(p, ec)) return {p.string()};
  }
  return {other.binary};
}

void run_other_app(const OtherApp& other, const std::vector<std::string>& args) {
  std::vector<std::string> command = other_app_command(other);
  command.insert(command.end(), args.begin(), args.end());
  std::string text;
  for (const auto& a : command) text += (text.empty() ? "" : " ") + a;
  int status = 0;
  try {
    status = train::run_command(command);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string(e.what()) + " (set " + other.env + " to the " + other.binary + " binary)");
  }
  if (status != 0) throw std::runtime_error(text + ": exited with status " + std::to_string(status));
}

}  // namespace qfleet::app
