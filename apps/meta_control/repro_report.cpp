// The reproduction's Markdown: one table per experiment with the paper's figures beside ours,
// and reproduce-all's document (experiments.hpp; docs/reproduction.md is its output).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>

#include "experiments.hpp"
#include "meta_control.hpp"

namespace qfleet::meta {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string num(double x, int digits = 4) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, x);
  return b;
}
std::string sci(double x) {
  char b[64];
  std::snprintf(b, sizeof b, "%.2e", x);
  return b;
}
double d(const json& j) { return j.get<double>(); }

std::string model_line(const json& m) {
  std::ostringstream o;
  if (m["key"] == "paper_file")
    return "`paper_file`: the paper's own policy, " + m["source"].get<std::string>() + " (" + m["meta"].dump() + ")";
  o << "`" << m["key"].get<std::string>() << "`: preset `" << m["preset"].get<std::string>() << "`, "
    << m["iterations"].get<int64_t>() << " iterations, " << m["checkpoint_policy"].get<std::string>() << " parameters";
  if (m["checkpoint_policy"] == "best")
    o << " (iteration " << m["selected"]["iteration"].get<int64_t>() << ", fresh-task fidelity "
      << num(d(m["selected"]["fresh_validation_fidelity"])) << ")";
  return o.str();
}

std::string gap_vs_k(const json& r) {
  const json& p = r["paper"];
  std::ostringstream o;
  o << "| policy | F_0 | adaptation | G_30 | c | beta | R^2 (K <= 30) | R^2 (K <= 50) |\n|---|---|---|---|---|---|---|---|\n";
  o << "| paper (Fig. 3a) | 0.947 (its last validation, iteration 150) | Adam 1e-4, clip 1 | " << num(d(p["G_30"])) << " | "
    << num(d(p["c"])) << " | 0.18-0.19 | " << num(d(p["r2"]), 2) << " | |\n";
  for (const auto& m : r["ours"]["models"])
    for (const auto& [name, run] : m["runs"].items()) {
      const auto& a = run["adapt"];
      o << "| " << m["model"]["key"].get<std::string>() << " | " << num(d(m["F_0"])) << " | " << (a["optimizer"] == "adam" ? "Adam " : "SGD ")
        << a["lr"].get<double>()
        << (a["grad_clip"].get<double>() > 0 ? ", clip 1" : "") << " | " << num(d(run["G_30"]), 5) << " | "
        << num(d(run["fit_K30"]["c"]), 5) << " | " << num(d(run["fit_K30"]["beta"]), 3) << " | " << num(d(run["fit_K30"]["r2"]), 3)
        << " | " << num(d(run["fit_K50"]["r2"]), 3) << " |\n";
    }
  const auto& ab = r["ours"]["ablation_integrator"];
  o << "\nIntegrator ablation (the first policy, Adam): " << ab["integrator"].get<std::string>() << ": G_30 "
    << num(d(ab["G_30_rk4"]), 6) << " against " << num(d(ab["G_30_exact"]), 6) << " exact; largest |F difference| "
    << sci(d(ab["max_abs_F_difference"])) << ".\n";
  for (const auto& m : r["ours"]["models"]) o << "\n- " << model_line(m["model"]);
  o << "\n";
  return o.str();
}

std::string gap_vs_variance(const json& r) {
  const json& p = r["paper"];
  const json& u = r["ours"];
  std::ostringstream o;
  o << "| x axis | slope | intercept | R^2 | paper R^2 |\n|---|---|---|---|---|\n";
  o << "| var(gamma_deph) + var(gamma_relax) | " << num(d(u["fit_variance"]["slope"]), 3) << " | "
    << sci(d(u["fit_variance"]["intercept"])) << " | " << num(d(u["fit_variance"]["r2"]), 3) << " | "
    << num(d(p["r2_variance"]), 2) << " |\n";
  o << "| sigma^2 = diversity^2 | " << sci(d(u["fit_sigma2"]["slope"])) << " | " << sci(d(u["fit_sigma2"]["intercept"])) << " | "
    << num(d(u["fit_sigma2"]["r2"]), 3) << " | " << num(d(p["r2_sigma2"]), 2) << " |\n\n";
  auto range = [&](const json& v) {
    const auto x = v.get<std::vector<double>>();
    return num(*std::min_element(x.begin(), x.end()), 3) + " to " + num(*std::max_element(x.begin(), x.end()), 3);
  };
  o << "R^2 over " << u["draws"]["r2_variance"].size() << " draws of the tasks (the same policy): " << range(u["draws"]["r2_variance"])
    << " (variance), " << range(u["draws"]["r2_sigma2"]) << " (sigma^2); the table's row is the first draw. ";
  const json& lin = u["r2_if_exactly_linear"];
  o << "Were G exactly linear in the variance, sampling " << u["tasks_per_scale"].get<int64_t>()
    << " tasks per scale would alone give R^2 " << num(d(lin["median"]), 2) << " (median; 90% of "
    << lin["draws"].get<int64_t>() << " redraws in " << num(d(lin["p05"]), 2) << " to " << num(d(lin["p95"]), 2)
    << "): each scale's G carries its standard error over its tasks.\n\n";
  if (u.contains("paper_file"))
    o << "The paper's own policy (`--paper-checkpoint`): R^2 " << num(d(u["paper_file"]["fit_variance"]["r2"]), 3) << " (variance), "
      << num(d(u["paper_file"]["fit_sigma2"]["r2"]), 3) << " (sigma^2); over its draws " << range(u["paper_file"]["draws"]["r2_variance"])
      << " and " << range(u["paper_file"]["draws"]["r2_sigma2"]) << ".\n\n";
  o << "G_20 from " << sci(d(u["G"].front())) << " (diversity " << num(d(u["diversity"].front()), 2) << ") to "
    << sci(d(u["G"].back())) << " (diversity " << num(d(u["diversity"].back()), 2) << "); "
    << u["tasks_per_scale"].get<int64_t>() << " tasks per scale; policy " << model_line(u["model"]) << ".\n";
  return o.str();
}

std::string ood(const json& r) {
  const json& p = r["paper"];
  std::ostringstream o;
  o << "| policy | mean-task policy | meta init | adapted (K = " << r["ours"]["adapt"]["steps"].get<int64_t>()
    << ") | random init | random, adapted | per-task GRAPE |\n|---|---|---|---|---|---|---|\n";
  o << "| paper (Fig. 4b) | " << num(d(p["mean_task_policy"]), 3) << " | " << num(d(p["meta_init"]), 3) << " | "
    << num(d(p["adapted"]), 3) << " | " << num(d(p["random_init"])) << " | " << num(d(p["random_adapted_K30"]), 3)
    << " (K = 30) | |\n";
  for (const auto& m : r["ours"]["models"])
    o << "| " << m["model"]["key"].get<std::string>() << " | " << num(d(m["mean_task_policy"])) << " | " << num(d(m["meta_init"]))
      << " | " << num(d(m["adapted"])) << " | " << num(d(m["random_init"])) << " | " << num(d(m["random_adapted"])) << " | "
      << num(d(m["per_task_grape"])) << " |\n";
  o << "\n" << r["ours"]["tasks"].get<int64_t>() << " tasks around (" << num(d(r["ours"]["centre"][0]), 2) << ", "
    << num(d(r["ours"]["centre"][1]), 2) << ") +-15%, all outside the training box: "
    << (r["ours"]["all_tasks_outside_training_box"].get<bool>() ? "yes" : "no") << ".\n";
  return o.str();
}

std::string cz(const json& r) {
  const json& p = r["paper"];
  const json& u = r["ours"];
  std::ostringstream o;
  o << "| | F_0 | F_5 | F_30 | c | beta | R^2 |\n|---|---|---|---|---|---|---|\n";
  o << "| paper (Fig. 5) | " << num(d(p["F_0"]), 3) << " | " << num(d(p["F_5"]), 3) << " | " << num(d(p["F_30"]), 3) << " | "
    << num(d(p["c"]), 3) << " | " << num(d(p["beta"]), 3) << " | " << num(d(p["r2"]), 3) << " |\n";
  o << "| ours | " << num(d(u["F_0"])) << " | " << num(d(u["F_5"])) << " | " << num(d(u["F_30"])) << " | " << num(d(u["fit"]["c"]))
    << " | " << num(d(u["fit"]["beta"]), 3) << " | " << num(d(u["fit"]["r2"]), 3) << " |\n\n";
  o << "Policy " << model_line(u["model"]) << "; " << u["tasks"].get<int64_t>() << " tasks.\n";
  return o.str();
}

std::string vs_grape(const json& r) {
  const json& p = r["paper"];
  const json& u = r["ours"];
  const char* keys[] = {"robust_grape", "meta_init", "K5", "K10", "K20", "per_task_grape"};
  const char* names[] = {"robust GRAPE (mean task)", "meta init (K = 0)", "meta, K = 5 SGD", "meta, K = 10 SGD",
                         "meta, K = 20 SGD", "per-task GRAPE"};
  std::ostringstream o;
  o << "| method | paper (%) | ours (%) | ours, std over tasks |\n|---|---|---|---|\n";
  for (int i = 0; i < 6; ++i)
    o << "| " << names[i] << " | " << num(d(p[keys[i]]), 3) << " | " << num(d(u["mean_percent"][std::size_t(i)]), 3) << " | "
      << num(d(u["std_percent"][std::size_t(i)]), 3) << " |\n";
  o << "\n" << u["tasks"].get<int64_t>() << " tasks; policy " << model_line(u["model"]) << ".\n";
  return o.str();
}

std::string lemmas(const json& r) {
  const json& u = r["ours"];
  std::ostringstream o;
  o << "| quantity | ours | method |\n|---|---|---|\n";
  o << "| PL constant mu (min; median) | " << sci(d(u["pl"]["mu_min"])) << "; " << sci(d(u["pl"]["mu_median"])) << " | "
    << u["pl"]["method"].get<std::string>() << " (" << u["pl"]["points"].get<int64_t>() << " points) |\n";
  o << "| Lipschitz constant C_L (sampled; supremum) | " << num(d(u["lipschitz"]["C_L"])) << "; " << num(d(u["lipschitz"]["C_L_sup"]))
    << " | " << u["lipschitz"]["method"].get<std::string>() << " |\n";
  o << "| the loss's Lipschitz constant in the task | " << num(d(u["lipschitz"]["loss_C"])) << " | "
    << u["lipschitz"]["loss_method"].get<std::string>() << " |\n";
  o << "| control separation: slope (R^2) | " << num(d(u["control_separation"]["slope"]), 3) << " ("
    << num(d(u["control_separation"]["r2"]), 3) << ") | " << u["control_separation"]["method"].get<std::string>() << " |\n";
  return o.str();
}

}  // namespace

std::string experiment_table(const json& r) {
  const std::string name = r["experiment"];
  std::string body = name == "gap-vs-k"              ? gap_vs_k(r)
                     : name == "gap-vs-variance"     ? gap_vs_variance(r)
                     : name == "out-of-distribution" ? ood(r)
                     : name == "cz"                  ? cz(r)
                     : name == "vs-grape"            ? vs_grape(r)
                                                     : lemmas(r);
  return body + "\nThe paper's figures: " + r["paper"]["source"].get<std::string>() + ". Ours: `" +
         r["command"].get<std::string>() + "`, " + num(d(r["seconds"]), 1) + " s.\n";
}

json reproduce_all(const ReproOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  json all = json::object();
  for (const auto& name : experiment_names()) all[name] = run_experiment(name, o);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::ostringstream md;
  md << "# Reproducing arXiv:2601.18973 on qfleet\n\n"
     << "Written by `qfleet-meta reproduce all" << (o.tiny ? " --tiny" : "") << " --seed " << o.seed
     << "` (every experiment from scratch, policies trained on the way), " << num(seconds / 60, 1) << " minutes, "
     << torch::get_num_threads() << " threads. Each section's numbers are in `<out>/<experiment>/result.json` with the "
        "configuration and seeds; `python -m qfleet.meta_control.plot_reproduction <out>` draws the figures. "
        "docs/meta_control.md describes the presets (`original`, `original_rk4`, `cz_paper`) and the why of each "
        "difference is in docs/reproduction_notes.md.\n";
  const char* titles[] = {"Adaptation gap against K (Fig. 3a)", "Adaptation gap against task variance (Fig. 3b)",
                          "Out of distribution (Fig. 4)", "Two-qubit CZ (Fig. 5)", "Against GRAPE (appendix)",
                          "The lemmas, numerically (Fig. 2)"};
  for (std::size_t i = 0; i < experiment_names().size(); ++i) {
    const auto& name = experiment_names()[i];
    md << "\n## " << titles[i] << " — `" << name << "`\n\n" << experiment_table(all[name]);
  }
  write_file_atomic((fs::path(o.out_dir) / "reproduction.md").string(), md.str());
  return {{"experiments", all}, {"seconds", seconds}};
}

}  // namespace qfleet::meta
