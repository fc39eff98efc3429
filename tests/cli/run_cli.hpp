// Runs the real qfleet binary (QFLEET_CLI_PATH) through the shell, with stdout and
// stderr captured in temporary files.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace qfleet_test {

struct CliResult {
  int status = -1;  // exit status, or 128 + signal number when killed by a signal
  std::string out;
  std::string err;
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The JSON object a doc shows between `<!-- MARKER:begin -->` and `<!-- MARKER:end -->`
// (docs/cli.md's example problems and outputs), from its first `{` to its last `}`;
// empty when a marker or the braces are missing.
inline std::string doc_block(const std::string& doc, const std::string& marker) {
  const std::string begin = "<!-- " + marker + ":begin -->", end = "<!-- " + marker + ":end -->";
  const auto b = doc.find(begin), e = doc.find(end);
  if (b == std::string::npos || e == std::string::npos || e < b) return "";
  const std::string block = doc.substr(b + begin.size(), e - b - begin.size());
  const auto open = block.find('{'), close = block.rfind('}');
  if (open == std::string::npos || close == std::string::npos || close < open) return "";
  return block.substr(open, close - open + 1);
}

// A fresh path in the test temp directory (unique per process and call).
inline std::string temp_path(const std::string& suffix) {
  static std::atomic<int> counter{0};
  return ::testing::TempDir() + "qfleet_cli_" + std::to_string(::getpid()) + "_" +
         std::to_string(counter++) + suffix;
}

inline std::string write_temp(const std::string& content, const std::string& suffix = ".json") {
  const std::string path = temp_path(suffix);
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

// A float64 .npy file of any shape, C order.
inline std::string npy_file(const std::vector<std::size_t>& shape, const std::vector<double>& values) {
  std::string dims;
  for (const std::size_t n : shape) dims += std::to_string(n) + ", ";
  std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (" + dims + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  for (const double v : values) bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
  return write_temp(bytes, ".npy");
}

// Runs `BINARY ARGS...`; stdin is `stdin_text` when given, else /dev/null.
inline CliResult run_program(const std::string& binary, const std::vector<std::string>& args,
                             const std::optional<std::string>& stdin_text = std::nullopt) {
  const std::string out = temp_path(".out"), err = temp_path(".err");
  std::string cmd = shell_quote(binary);
  for (const auto& a : args) {
    cmd += ' ';
    cmd += shell_quote(a);
  }
  std::string in_path;
  if (stdin_text) {
    in_path = write_temp(*stdin_text, ".in");
    cmd += " < ";
    cmd += shell_quote(in_path);
  } else {
    cmd += " < /dev/null";
  }
  cmd += " > ";
  cmd += shell_quote(out);
  cmd += " 2> ";
  cmd += shell_quote(err);
  const int st = std::system(cmd.c_str());
  CliResult r;
  if (st != -1 && WIFEXITED(st)) {
    r.status = WEXITSTATUS(st);
  } else if (st != -1 && WIFSIGNALED(st)) {
    r.status = 128 + WTERMSIG(st);
  }
  r.out = read_file(out);
  r.err = read_file(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  if (!in_path.empty()) std::remove(in_path.c_str());
  return r;
}

#ifdef QFLEET_CLI_PATH
// Runs `qfleet ARGS...`.
inline CliResult run_cli(const std::vector<std::string>& args,
                         const std::optional<std::string>& stdin_text = std::nullopt) {
  return run_program(QFLEET_CLI_PATH, args, stdin_text);
}
#endif

inline std::string source_path(const std::string& rel) {
  return std::string(QFLEET_SOURCE_DIR) + "/" + rel;
}

}  // namespace qfleet_test
