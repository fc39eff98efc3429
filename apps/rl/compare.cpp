// PPO beside GRAPE and meta-learning on the same tasks (compare.hpp; docs/rl.md).
#include "compare.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "common/other_app.hpp"
#include "evaluation.hpp"
#include "qfleet/files.hpp"
#include "qfleet/json_problem.hpp"
#include "qfleet/train.hpp"

namespace qfleet::rl {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {
json read_json(const fs::path& p) {
  json j = json::parse(read_file_bounded(p.string()), nullptr, false);  // (a regular file of at most 64 MiB)
  if (j.is_discarded()) throw std::runtime_error(p.string() + ": not valid JSON");
  return j;
}
}  // namespace

bool compare_main(const PpoConfig& cfg, const std::string& ppo_dir, int64_t meta_iterations, const TrainOptions& options) {
  const fs::path out(cfg.output_dir);
  json ppo;
  fs::path ppo_path = ppo_dir.empty() ? out : fs::path(ppo_dir);
  if (ppo_dir.empty()) {
    ppo = train_ppo(cfg, options);
  } else {
    ppo = read_json(ppo_path / "report.json");
  }
  const PpoConfig pc = PpoConfig::from_json(ppo.at("config"));
  // qfleet-meta on the same physics, seed and validation tasks, run as its own program
  // (its "fast" preset with this configuration file; its report.json has the baselines),
  // replacing the meta/ run of an earlier comparison in this folder.
  json mj = meta_config_json(pc.env, pc.validation_tasks, pc.seed);
  mj["iterations"] = meta_iterations;
  const fs::path meta_dir = out / "meta";
  fs::create_directories(meta_dir);
  train::write_file_atomic((meta_dir / "config.json").string(), mj.dump(1));
  app::run_other_app({"qfleet-meta", "qfleet.meta_control", "QFLEET_META", "meta_control"},
                     {"--preset", "fast", "--config", (meta_dir / "config.json").string(), "--out", meta_dir.string(),
                      "--overwrite", "--quiet"});
  const json meta_report = read_json(meta_dir / "report.json");

  const json& pt = ppo["validation"]["tasks"];
  const json& mt = meta_report["validation"]["tasks"];
  if (pt.size() != mt.size()) throw std::runtime_error("the PPO and meta-control validation sets differ in size");
  json rows = json::array();
  double s_ppo = 0, s_grape = 0, s_meta = 0, s_robust = 0, max_gap = -1e9, max_eval_diff = 0;
  for (std::size_t b = 0; b < pt.size(); ++b) {
    for (const char* k : {"gamma_deph", "gamma_relax"})
      if (std::abs(pt[b][k].get<double>() - mt[b][k].get<double>()) > 1e-12)
        throw std::runtime_error("validation task " + std::to_string(b) + " differs between PPO and qfleet-meta");
    const double fp = pt[b]["fidelity"], fg = mt[b]["fidelity_grape"], fm = mt[b]["fidelity_after"], fr = mt[b]["fidelity_robust"];
    // The independent check: PPO's pulses through `qfleet eval`'s library.
    const json problem = read_json(ppo_path / "eval" / ("task_" + std::to_string(b) + ".json"));
    const json result = json_problem::evaluate(problem);
    const double fe = result["fidelity"][0].get<double>();
    max_eval_diff = std::max(max_eval_diff, std::abs(fe - fp));
    s_ppo += fp;
    s_grape += fg;
    s_meta += fm;
    s_robust += fr;
    max_gap = std::max(max_gap, fg - fp);
    rows.push_back({{"gamma_deph", pt[b]["gamma_deph"]}, {"gamma_relax", pt[b]["gamma_relax"]}, {"ppo", fp},
                    {"ppo_qfleet_eval", fe}, {"grape", fg}, {"meta_adapted", fm}, {"robust", fr}, {"gap_grape_ppo", fg - fp}});
  }
  const double n = double(pt.size());
  const double m_ppo = s_ppo / n, m_grape = s_grape / n;
  // Env steps and wall time until the validation mean came within 0.002 of GRAPE's mean.
  json reached = nullptr;
  for (const auto& row : ppo["curve"])
    if (row.contains("validation_fidelity") && row["validation_fidelity"].get<double>() >= m_grape - 0.002) {
      reached = {{"env_steps", row["env_steps"]}, {"wall_s", row["wall_s"]}, {"rollout", row["rollout"]}};
      break;
    }
  const json summary = {{"tasks", rows},
                        {"mean", {{"ppo", m_ppo}, {"grape", m_grape}, {"meta_adapted", s_meta / n}, {"robust", s_robust / n}}},
                        {"gap_grape_minus_ppo", {{"mean", m_grape - m_ppo}, {"max", max_gap}}},
                        {"within_0.002_of_grape", m_grape - m_ppo <= 0.002},
                        {"reached_within_0.002", reached},
                        {"qfleet_eval_max_abs_diff", max_eval_diff},
                        {"ppo_env_steps", ppo["env_steps"]},
                        {"ppo_wall_s", ppo["timings_s"]["wall"]},
                        {"meta_iterations", meta_iterations},
                        {"meta_training_s", meta_report["timings_s"]["training"]},
                        {"grape_iterations", meta_report["config"]["grape_iterations"]}};
  fs::create_directories(out);
  train::write_file_atomic((out / "compare.json").string(), summary.dump(1));
  if (!options.quiet) {
    std::printf("%-28s %10s\n", "on the validation tasks", "mean F");
    std::printf("%-28s %10.5f\n", "PPO (deterministic)", m_ppo);
    std::printf("%-28s %10.5f\n", "per-task GRAPE", m_grape);
    std::printf("%-28s %10.5f\n", "meta-learned, adapted", s_meta / n);
    std::printf("%-28s %10.5f\n", "robust pulse", s_robust / n);
    std::printf("GRAPE - PPO: mean %.5f, max %.5f (%s 0.002)\n", m_grape - m_ppo, max_gap,
                m_grape - m_ppo <= 0.002 ? "within" : "NOT within");
    if (!reached.is_null())
      std::printf("PPO came within 0.002 after %lld env steps, %.1f s\n", (long long)reached["env_steps"].get<int64_t>(),
                  reached["wall_s"].get<double>());
    std::printf("qfleet eval of PPO's pulses: max |F_eval - F_env| = %.2e\n", max_eval_diff);
  }
  return max_eval_diff < 1e-9;
}

}  // namespace qfleet::rl
