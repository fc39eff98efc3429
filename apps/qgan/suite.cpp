// The benchmark suite end to end (suite.hpp).
#include "suite.hpp"

#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "json_io.hpp"
#include "qfleet/json_problem.hpp"
#include "qfleet/train.hpp"
#include "common/report_header.hpp"

extern char** environ;

namespace qfleet::qgan {
namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

SuiteConfig::SuiteConfig() {
  qgan.target.name = "gaussian2d";
  qgan.epochs = 1000;
  tournament.qubits = 6;
  classifier.circuit = "qgan_generator";
}

namespace {

// Runs `python -m qfleet.qgan.plot out`; returns its exit status (127: could not start).
int run_figures(const std::string& python, const std::string& out) {
  std::vector<std::string> args = {python, "-m", "qfleet.qgan.plot", out};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawnp(&pid, python.c_str(), nullptr, nullptr, argv.data(), environ) != 0) return 127;
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return 127;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

json run_suite(const SuiteConfig& cfg) {
  const app::RunClock clock;
  SuiteConfig c = cfg;
  c.qgan.out = (fs::path(c.out) / "qgan").string();
  c.qgan.progress = c.progress;
  c.tournament.out = (fs::path(c.out) / "tournament").string();
  c.tournament.generator_report = (fs::path(c.qgan.out) / "report.json").string();
  c.tournament.progress = c.progress;
  c.classifier.out = (fs::path(c.out) / "classifier").string();
  c.classifier.device_files = c.tournament.device_files;
  c.classifier.generator_report = c.tournament.generator_report;
  c.classifier.seed = c.tournament.seed, c.classifier.threads = c.tournament.threads;
  c.classifier.device = c.qgan.device;
  c.classifier.progress = c.progress;
  validate(c.qgan);
  validate(c.tournament);
  validate(c.classifier);
  const json config = {{"qgan", c.qgan.to_json()},
                       {"tournament", c.tournament.to_json()},
                       {"classifier", c.classify ? c.classifier.to_json() : json()}};

  if (c.progress) std::fprintf(stderr, "[1/4] qGAN: %s, %lld epochs\n", c.qgan.target.name.c_str(), static_cast<long long>(c.qgan.epochs));
  const auto t1 = Clock::now();
  const json r = train(c.qgan);
  const double s_qgan = std::chrono::duration<double>(Clock::now() - t1).count();
  if (c.progress) std::fprintf(stderr, "[2/4] tournament\n");
  const auto t2 = Clock::now();
  const json t = run_tournament(c.tournament);
  const double s_tour = std::chrono::duration<double>(Clock::now() - t2).count();
  json cl;
  double s_class = 0;
  if (c.classify) {
    if (c.progress) std::fprintf(stderr, "[3/4] device classifier on the trained generator\n");
    const auto tc = Clock::now();
    cl = run_classifier(c.classifier);
    s_class = std::chrono::duration<double>(Clock::now() - tc).count();
  }
  double s_fig = 0;
  int fig_status = -1;
  if (c.figures) {
    if (c.progress) std::fprintf(stderr, "[4/4] figures: %s -m qfleet.qgan.plot %s\n", c.python.c_str(), c.out.c_str());
    const auto t3 = Clock::now();
    fig_status = run_figures(c.python, c.out);
    s_fig = std::chrono::duration<double>(Clock::now() - t3).count();
  }
  json summary = app::report_header("qfleet-qgan suite", config, c.qgan.seed, clock);
  summary["qgan"] = {{"report", (fs::path(c.qgan.out) / "report.json").string()},
                     {"target", r["target"]["name"]},
                     {"epochs", r["final"]["epochs"]},
                     {"kl", r["final"]["kl"]},
                     {"ks", r["final"]["ks"]},
                     {"best_kl", r["final"]["best_kl"]},
                     {"seconds", s_qgan}};
  summary["tournament"] = {{"report", (fs::path(c.tournament.out) / "tournament.json").string()},
                           {"devices", t["devices"].size()},
                           {"circuits", t["circuits"].size()},
                           {"pairs", t["pairs"].size()},
                           {"ranking", t["ranking"]},
                           {"seconds", s_tour}};
  summary["classifier"] = json{{"ran", c.classify}, {"seconds", s_class}};
  if (c.classify) {
    summary["classifier"]["report"] = (fs::path(c.classifier.out) / "classifier.json").string();
    summary["classifier"]["results"] = json::array();
    for (const auto& x : cl["results"])
      summary["classifier"]["results"].push_back({{"shots", x["shots"]},
                                                  {"accuracy", x["accuracy"]},
                                                  {"bayes", x["bayes"]["accuracy"]},
                                                  {"fraction_of_bayes", x["fraction_of_bayes"]}});
  }
  summary["figures"] = {{"command", c.python + " -m qfleet.qgan.plot " + c.out},
                        {"ran", c.figures},
                        {"exit_status", fig_status},
                        {"seconds", s_fig}};
  summary["seconds"] = summary["wall_seconds"];
  train::write_file_atomic((fs::path(c.out) / "summary.json").string(), json_problem::dump(summary, 1));
  return summary;
}

}  // namespace qfleet::qgan
