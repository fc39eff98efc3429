// The qfleet command-line tool (docs/cli.md).
//
//   qfleet demo                   a teacher-student demo (see tools/demo.hpp)
//   qfleet eval FILE.json | -     evaluate a problem, print JSON results
//   qfleet gates                  the gate catalogue as JSON
//   qfleet info                   version, instruction sets, threads, CUDA devices
//   qfleet --version
//
// Adding a subcommand: write `void register_NAME(CLI::App& app, Action& action)`
// (see register_gates below for the pattern: add the subcommand and its options
// to `app`, and in its callback store what to run in `action`), declare it in
// the list below, add it to kSubcommands, and list its file in
// tools/CMakeLists.txt. Whatever the action throws is reported by main():
// qfleet::Error (input and library errors) -> "qfleet: error: ...", exit 2.
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <new>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "qfleet/files.hpp"
#include "qfleet/json_problem.hpp"
#include "qfleet/message.hpp"
#include "qfleet/qfleet.hpp"
#include "thread_placement.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace qfleet::cli {

// What the chosen subcommand runs once arguments are parsed; returns the exit status.
using Action = std::function<int()>;
using Registrar = void (*)(CLI::App& app, Action& action);

void register_eval(CLI::App& app, Action& action);
void register_gates(CLI::App& app, Action& action);
void register_info(CLI::App& app, Action& action);
void register_demo(CLI::App& app, Action& action);  // tools/demo_cli.cpp

inline constexpr Registrar kSubcommands[] = {register_demo, register_eval, register_gates, register_info};

inline constexpr int kExitError = 2;  // any rejected input, library error or usage error

namespace {

// One line on stderr, whatever the message holds, of at most about a thousand bytes.
int report_error(std::string_view message) {
  std::string line;
  for (const char ch : qfleet::capped_message(std::string(message))) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '\n') {
      line += "\\n";
    } else if (u < 0x20 || u == 0x7f) {
      line += fmt::format("\\x{:02x}", u);
    } else {
      line += ch;
    }
  }
  std::fflush(stdout);
  std::fputs(fmt::format("qfleet: error: {}\n", line).c_str(), stderr);
  return kExitError;
}

// Library messages start with "qfleet: " already.
std::string without_prefix(const char* what) {
  std::string_view s(what);
  if (s.substr(0, 8) == "qfleet: ") s.remove_prefix(8);
  return std::string(s);
}

int print_json(const nlohmann::json& value, int indent) {
  const std::string text = qfleet::json_problem::dump(value, indent);
  errno = 0;
  std::cout << text << '\n';
  std::cout.flush();
  if (!std::cout) {
    const int e = errno;  // (EFBIG past a file-size limit, ENOSPC on a full disk)
    return report_error(e == 0 ? "cannot write the result to stdout"
                               : fmt::format("cannot write the result to stdout: {}", std::strerror(e)));
  }
  return 0;
}

void add_indent_option(CLI::App* sub, int& indent) {
  sub->add_option("--indent", indent,
                  "Pretty-print with this many spaces per level (arrays of numbers stay on "
                  "one line); default: one line")
      ->check(CLI::Range(0, 16));
}

// The whole text of FILE, or of stdin for "-": at most qfleet::kMaxTextFileBytes, from a
// regular file (a device such as /dev/zero or a pipe named as FILE is refused at once).
std::string read_input(const std::string& file, std::string& source) {
  source = file == "-" ? "<stdin>" : file;
  try {
    if (file == "-") return qfleet::read_stream_bounded(STDIN_FILENO, source);
    return qfleet::read_file_bounded(file);
  } catch (const std::runtime_error& e) {
    throw qfleet::json_problem::ProblemError(e.what());
  }
}

}  // namespace

// ---------------------------------------------------------------- eval ---

void register_eval(CLI::App& app, Action& action) {
  struct Options {
    std::string file, output_dir;
    int indent = -1;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "eval", "Evaluate a JSON problem (FILE, or - for stdin) and print JSON results");
  sub->add_option("FILE", opt->file, "Problem file (docs/cli.md), or - to read stdin")->required();
  sub->add_option("--output-dir", opt->output_dir,
                  "Folder for the problem's output_npy files, a relative path inside it (default: the problem "
                  "file's folder; the working directory for stdin)");
  add_indent_option(sub, opt->indent);
  sub->callback([&action, opt] {
    action = [opt] {
      std::string source;
      const std::string text = read_input(opt->file, source);
      nlohmann::json problem = qfleet::json_problem::parse_text(text, source);
      // .npy files named in the problem are relative to its file (to the working directory for stdin)
      std::string base;
      if (opt->file != "-") {
        // A big batch: its one parallel region runs faster with the threads bound from
        // the start (tools/thread_placement.cpp); the program may start again here, where
        // the file can be read again (a regular file: not a pipe such as /dev/stdin's).
        std::error_code ec;
        if (qfleet::json_problem::reads_npy_arrays(problem) && std::filesystem::is_regular_file(opt->file, ec))
          run_again_with_threads_bound();
        base = std::filesystem::path(opt->file).parent_path().string();
      }
      qfleet::json_problem::resolve_npy_paths(problem, base, opt->output_dir);
      nlohmann::json result = qfleet::json_problem::evaluate(problem);
      result["openmp"] = openmp_placement();  // how this run was threaded (docs/cli.md "Threads")
      return print_json(result, opt->indent);
    };
  });
}

// --------------------------------------------------------------- gates ---

void register_gates(CLI::App& app, Action& action) {
  auto indent = std::make_shared<int>(-1);
  CLI::App* sub = app.add_subcommand(
      "gates", "Print the gate catalogue as JSON (name, wires, params, controls)");
  add_indent_option(sub, *indent);
  sub->callback([&action, indent] {
    action = [indent] { return print_json(qfleet::json_problem::gate_catalogue(), *indent); };
  });
}

// ---------------------------------------------------------------- info ---

void register_info(CLI::App& app, Action& action) {
  auto indent = std::make_shared<int>(-1);
  CLI::App* sub = app.add_subcommand(
      "info", "Print the version, instruction sets, OpenMP threads and CUDA devices as JSON");
  add_indent_option(sub, *indent);
  sub->callback([&action, indent] {
    action = [indent] {
      nlohmann::json info = nlohmann::json::object();
      info["version"] = QFLEET_VERSION_STRING;
      info["isas"] = qfleet::available_isas();
#if defined(_OPENMP)
      info["openmp_threads"] = omp_get_max_threads();
#else
      info["openmp_threads"] = 1;
#endif
      info["openmp"] = openmp_placement();
      info["cuda_backend"] = qfleet::built_with_cuda();
      info["cuda_devices"] = qfleet::cuda_device_count();
      return print_json(info, *indent);
    };
  });
}

}  // namespace qfleet::cli

int main(int argc, char** argv) {
  using namespace qfleet::cli;
  // Past a file-size limit (ulimit -f) a write then fails with EFBIG and is reported as one
  // line, instead of SIGXFSZ ending the program without a word.
  std::signal(SIGXFSZ, SIG_IGN);
  remember_command_line(argv);  // for run_again_with_threads_bound (`eval` of .npy arrays)
  try {
    CLI::App app{"qfleet: batched simulation of parameterized quantum circuits", "qfleet"};
    app.set_version_flag("--version", "qfleet " QFLEET_VERSION_STRING,
                         "Print the version and exit");
    app.require_subcommand(0, 1);  // none is reported below, after unknown flags are
    Action action;
    for (const Registrar r : kSubcommands) r(app, action);
    if (argc > 1 && argv[1][0] != '-') {  // name the unknown subcommand (CLI11 would not)
      std::string known;
      bool found = false;
      for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
        known += (known.empty() ? "" : ", ") + sub->get_name();
        found |= sub->get_name() == argv[1];
      }
      if (!found) {
        return report_error(fmt::format(
            "unknown subcommand '{}' (known: {}; run 'qfleet --help' for usage)", argv[1], known));
      }
    }
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
      return report_error(fmt::format("{} (run 'qfleet --help' for usage)", e.what()));
    }
    if (!action) return report_error("no subcommand given (run 'qfleet --help' for usage)");
    return action();
  } catch (const qfleet::Error& e) {
    return report_error(without_prefix(e.what()));
  } catch (const std::bad_alloc&) {
    return report_error("out of memory");
  } catch (const std::exception& e) {
    return report_error(fmt::format("internal error: {}", e.what()));
  } catch (...) {
    return report_error("internal error: unknown exception");
  }
}
