// Meta-learned robust quantum control on qfleet: physics, policy, meta-training,
// baselines and outputs (meta_control.hpp; docs/meta_control.md; the
// configuration is config.cpp, the command line cli.cpp).
#include "meta_control.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numbers>
#include <optional>
#include <tuple>
#include <cstring>

#include <ATen/CPUGeneratorImpl.h>
#include <sstream>

#include "qfleet/names.hpp"
#include "qfleet/version.hpp"
#include "trainer.hpp"
#include "common/lifecycle.hpp"
#include "common/memory_check.hpp"
#include "common/report_header.hpp"

namespace qfleet::meta {

using nlohmann::json;
using torch::Tensor;
namespace fs = std::filesystem;


namespace {

std::string csv_pulses(const Problem& pr, const std::vector<std::pair<std::string, Tensor>>& sets,
                       const Tensor& noise) {
  std::ostringstream o;
  o.precision(17);
  const bool per_qubit = noise.size(1) == 4;
  o << (per_qubit ? "task,kind,gamma_deph_0,gamma_relax_0,gamma_deph_1,gamma_relax_1,segment,t_start"
                  : "task,kind,gamma_deph,gamma_relax,segment,t_start");
  for (const auto& n : pr.control_names()) o << ',' << n;
  o << '\n';
  const Tensor nz = noise.to(torch::kFloat64);
  for (const auto& [kind, t] : sets) {
    const Tensor a = t.detach().to(torch::kFloat64).contiguous();
    const bool shared = a.dim() == 2;
    const int64_t T = shared ? 1 : a.size(0);
    for (int64_t b = 0; b < T; ++b) {
      const Tensor ab = shared ? a : a[b];
      for (int64_t s = 0; s < pr.n_segments(); ++s) {
        if (shared) {
          o << "all," << kind << (per_qubit ? ",,,,," : ",,,") << s;
        } else {
          o << b << ',' << kind;
          for (int64_t j = 0; j < noise.size(1); ++j) o << ',' << nz[b][j].item<double>();
          o << ',' << s;
        }
        o << ',' << double(s) * pr.segment_duration();
        for (int64_t k = 0; k < pr.n_controls(); ++k) o << ',' << ab[s][k].item<double>();
        o << '\n';
      }
    }
  }
  return o.str();
}

double mean_of(const Tensor& t) { return t.to(torch::kFloat64).mean().item<double>(); }

std::vector<double> doubles(const Tensor& t) {
  const Tensor c = t.detach().to(torch::kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

// One regime of the adaptation question: the mean fidelity after k = 0..K evaluation
// adaptation steps, G_k = F_k - F_0, the robust pulse and GRAPE on the same tasks.
json gap_json(const Tensor& curve, const Tensor& f_robust, const Tensor& f_grape, const Tensor& noise) {
  const Tensor c = curve.to(torch::kFloat64);
  const Tensor mean = c.mean(1);
  const Tensor fk = c[-1], fr = f_robust.to(torch::kFloat64);
  std::vector<int64_t> K(std::size_t(c.size(0)));
  for (std::size_t k = 0; k < K.size(); ++k) K[k] = int64_t(k);
  const Tensor n = noise.to(torch::kFloat64);
  return {{"tasks", c.size(1)},
          {"K", K},
          {"mean_fidelity", doubles(mean)},
          {"gap", doubles(mean - mean[0])},
          {"mean_robust", mean_of(fr)},
          {"mean_grape", mean_of(f_grape)},
          // the paired difference adapted - robust over tasks, and its standard error
          {"adapted_minus_robust", mean_of(fk - fr)},
          {"adapted_minus_robust_se", c.size(1) > 1 ? (fk - fr).std().item<double>() / std::sqrt(double(c.size(1))) : 0.0},
          {"gamma_deph_range", {n.select(1, 0).min().item<double>(), n.select(1, 0).max().item<double>()}},
          {"gamma_relax_range", {n.select(1, 1).min().item<double>(), n.select(1, 1).max().item<double>()}}};
}

std::string fmt(double x, int digits = 4) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, x);
  return b;
}

// The paragraph the numbers support (the report's "conclusion", printed by the command line).
std::string regime_sentence(const std::string& name, const json& g) {
  const auto& F = g["mean_fidelity"];
  const double f0 = F.front(), fk = F.back(), r = g["mean_robust"], gr = g["mean_grape"];
  const double d = g["adapted_minus_robust"], se = g["adapted_minus_robust_se"];
  const int64_t K = static_cast<int64_t>(F.size()) - 1;
  std::string s = name + " (" + std::to_string(g["tasks"].get<int64_t>()) + " tasks) the meta policy gives F = " + fmt(f0) +
                  " before and " + fmt(fk) + " after " + std::to_string(K) + " adaptation steps (G_" + std::to_string(K) +
                  " = " + fmt(fk - f0, 5) + "), against " + fmt(r) + " for the one robust pulse and " + fmt(gr) +
                  " for per-task GRAPE";
  if (gr - f0 > 1e-12 && K > 0)
    s += "; adaptation closes " + fmt(100 * (fk - f0) / (gr - f0), 1) + "% of the way to GRAPE";
  if (d > 2 * se && d > 0)
    s += ", and the adapted policy beats the robust pulse by " + fmt(d, 5) + " (+-" + fmt(se, 5) + ")";
  else if (d < -2 * se && d < 0)
    s += ", and the robust pulse beats the adapted policy by " + fmt(-d, 5) + " (+-" + fmt(se, 5) +
         "): meta-learning does not pay here";
  else
    s += ", and the adapted policy and the robust pulse are equal within the spread over tasks (" + fmt(d, 5) +
         " +- " + fmt(se, 5) + ")";
  return s + ".";
}

std::string conclusion(const json& adaptation) {
  std::string s = regime_sentence("In distribution", adaptation["in_distribution"]);
  if (adaptation.contains("out_of_distribution"))
    s += " " + regime_sentence("Out of distribution", adaptation["out_of_distribution"]);
  return s;
}

}  // namespace

MetaStep::MetaStep(const Config& cfg) : cfg_(cfg), trainer_(std::make_unique<Trainer>(cfg_)) {}
MetaStep::~MetaStep() = default;

Tensor MetaStep::gradient(const Tensor& theta, const Tensor& noise) {
  trainer_->check_step_inputs(theta, noise);
  trainer_->set_theta(theta);
  return trainer_->meta_grad(noise).second;
}

double MetaStep::objective(const Tensor& theta, const Tensor& noise) {
  trainer_->check_step_inputs(theta, noise);
  trainer_->set_theta(theta);
  const auto phi = trainer_->adapt(noise, cfg_.inner_steps).first;
  return (1 - trainer_->fidelity_nograd(phi, trainer_->features(noise), noise))
      .to(torch::kFloat64)
      .mean()
      .item<double>();
}

Tensor meta_gradient(const Config& cfg, const Tensor& theta, const Tensor& noise) {
  return MetaStep(cfg).gradient(theta, noise);
}

double meta_objective(const Config& cfg, const Tensor& theta, const Tensor& noise) {
  return MetaStep(cfg).objective(theta, noise);
}

int64_t max_processes(const Config& cfg) { return Trainer::reduction_blocks(cfg.meta_batch); }

int64_t policy_size(const Config& cfg) {
  const Problem pr(cfg);
  return Policy(policy_spec(cfg, pr)).size();
}

namespace {

// The meta-gradient's rows of this process's share of the meta-batch (or of the validation
// tasks, adapted the same way, where they are more), measured on 1 and 2 tasks drawn from
// a generator of their own before the run allocates them.
void check_memory(const Trainer& tr, const Config& cfg, int processes) {
  const int64_t share = (cfg.meta_batch + processes - 1) / processes;
  const bool val = cfg.validation_tasks > share;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(cfg.seed + 7);
  app::check_memory_fits(qfleet::train::device_from_setting(cfg.device), val ? "validation_tasks" : "meta_batch",
                         val ? cfg.validation_tasks : share, "tasks",
                         [&](int64_t n) { tr.task_rows(tr.sample(gen, n).to(tr.device())); });
}

// device = automatic: with a CUDA device visible, a few meta-gradient steps on each device
// (qfleet::train::choose_device) pick the faster; the report says why with both figures.
// Several processes follow rank 0's choice.
std::pair<std::string, std::string> resolve_device(const Config& cfg, qfleet::train::ProcessGroup* group) {
  if (cfg.device != "automatic")  // (through qfleet::train's reading of the setting: it loads LibTorch's CUDA half)
    return {qfleet::train::device_from_setting(cfg.device).is_cuda() ? "cuda" : "cpu", "requested"};
  if (qfleet::cuda_device_count() == 0) return {"cpu", "automatic: cpu, the only device here (no CUDA device visible)"};
  const int64_t P = policy_size(cfg);
  auto make_step = [&](const torch::Device& d) -> std::function<Tensor()> {
    Config c = cfg;
    c.device = d.is_cuda() ? "cuda" : "cpu";
    auto step = std::make_shared<MetaStep>(c);
    const bool single = value_named(kPrecisionNames, c.precision, "precision") == Precision::complex64;
    const auto opts = torch::TensorOptions().dtype(single ? torch::kFloat32 : torch::kFloat64);
    const Tensor theta = ((torch::rand({P}, opts) - 0.5) * 0.2).to(d);  // (resident where the run would be)
    auto gen = at::make_generator<at::CPUGeneratorImpl>(cfg.seed);
    const Tensor noise = sample_tasks(cfg, gen, cfg.meta_batch, opts.dtype().toScalarType()).to(d);
    return [step, theta, noise] { return step->gradient(theta, noise); };
  };
  const auto choice = qfleet::train::choose_device(make_step, {torch::kCPU, torch::Device(torch::kCUDA, 0)}, 1, 3);
  Tensor cuda_chosen = torch::full({1}, choice.device.is_cuda() ? 1.0 : 0.0, torch::kFloat64);
  if (group != nullptr && group->size() > 1) cuda_chosen = group->all_gather(cuda_chosen).narrow(0, 0, 1);
  const bool cuda = cuda_chosen.item<double>() > 0.5;
  return {cuda ? "cuda" : "cpu", "automatic: " + choice.reason + (cuda == choice.device.is_cuda() ? "" : "; rank 0 chose the other")};
}

// The training part of a run, as the lifecycle every app's run goes through
// (apps/common/lifecycle.hpp, on qfleet::train's StepRunner): resume (or a fresh log and
// the initial validation), one meta-iteration per step, checkpoints, and what the report
// says of it. The training fidelity stays on the device and the meter copies it to the
// host once per validate_every iterations (train_log.jsonl); validations are the only
// other host transfers. `stop_after` counts iterations from 0, not from the resume.
struct Training {
  int64_t first = 0, stop = 0, it = 0;  // iterations: this run's first, where it stopped, done in all
  double train_s = 0;
  std::vector<CurvePoint> curve;
  int64_t host_syncs = 0;
};

class MetaTraining {
 public:
  MetaTraining(Trainer& tr, const Config& cfg, const RunOptions& options, bool lead, const fs::path& out)
      : tr_(tr), cfg_(cfg), options_(options), lead_(lead),
        ck_path_((out / kCheckpointFile).string()), log_path_((out / "train_log.jsonl").string()) {}

  int64_t resume() {
    if (options_.resume) {
      const fs::path old_format = fs::path(ck_path_).parent_path() / "checkpoint.json";
      if (!fs::exists(ck_path_) && fs::exists(old_format))
        throw ConfigError("resume: " + old_format.string() +
                          " was written by an older qfleet (a JSON checkpoint, without a checksum); start the run again");
      if (!fs::exists(ck_path_)) throw ConfigError("resume: no checkpoint at " + ck_path_);
      t_.it = tr_.restore(ck_path_, t_.curve, t_.train_s);
    }  // (the runner starts the log afresh, or trims it to the checkpoint: StepRunner::run)
    if (lead_ && t_.it == 0 && t_.curve.empty()) record(0, std::nan(""));
    t_.stop = options_.stop_after >= 0 ? std::min(options_.stop_after, cfg_.iterations) : cfg_.iterations;
    t_.first = t_.it;
    train_s0_ = t_.train_s;
    t_train_ = Clock::now();
    return t_.first;
  }

  qfleet::train::RunnerOptions runner_options() const {
    qfleet::train::RunnerOptions ro;
    ro.steps = t_.stop;
    ro.sync_every = cfg_.validate_every;
    ro.log_path = lead_ ? log_path_ : "";
    ro.checkpoint_every = cfg_.checkpoint_every;
    return ro;  // (the progress bar is options.progress: it shows the validation fidelity)
  }

  qfleet::train::Metrics step(int64_t i) {
    const Tensor train_f = tr_.iteration(i);
    const int64_t done = i + 1;
    const bool validation = done % cfg_.validate_every == 0 || done == cfg_.iterations;
    if (lead_ && validation) record(done, train_f.item<double>());
    const int64_t select = cfg_.select_every > 0 ? cfg_.select_every : cfg_.validate_every;
    if (lead_ && cfg_.checkpoint_policy == "best" && (done % select == 0 || done == cfg_.iterations))
      tr_.consider_best(done);
    if (lead_ && options_.progress) options_.progress->update(done, cfg_.iterations, t_.curve.back().val_after);
    return qfleet::train::Metrics{{"train_fidelity"}, {train_f}};
  }

  void checkpoint(int64_t done) {
    t_.train_s = train_s0_ + seconds_since(t_train_);
    if (lead_) tr_.save(ck_path_, done, t_.curve, t_.train_s);
  }

  Training finish(const app::Loop& loop) {
    t_.it = std::max(t_.it, t_.stop);
    if (lead_ && options_.progress) options_.progress->finish();
    if (t_.first == t_.stop) checkpoint(t_.it);
    t_.train_s = train_s0_ + seconds_since(t_train_);
    t_.host_syncs = loop.host_syncs;
    return t_;
  }
  std::string settings() const {  // (named by an error while running: app::run_lifecycle)
    return "algorithm = " + cfg_.algorithm + ", meta_batch = " + std::to_string(cfg_.meta_batch) + ", solver = " +
           cfg_.solver + ", precision = " + cfg_.precision + ", device = " + cfg_.device;
  }

 private:
  void record(int64_t i, double train_f) {
    const auto v = tr_.validate();
    t_.curve.push_back({i, train_f, mean_of(v.before), mean_of(v.after)});
  }

  Trainer& tr_;
  const Config& cfg_;
  const RunOptions& options_;
  bool lead_;
  std::string ck_path_, log_path_;
  Training t_;
  double train_s0_ = 0;
  Clock::time_point t_train_;
};

// The trained policy (the one checkpoint_policy selects) on the validation tasks, and
// the baselines on the same tasks: one robust pulse, per-task GRAPE; the adaptation
// gap in and out of distribution.
struct Baselines {
  json selected, adaptation;
  Trainer::Validation val;
  Tensor meta_before, meta_adapted, robust, f_robust, f_grape, u_grape, from_meta;
  double val_s = 0, robust_s = 0, grape_s = 0;
};

json out_of_distribution(Trainer& tr, const Config& cfg, const Tensor& theta, const Tensor& robust) {
  const Problem& pr = tr.problem();
  const int64_t V = tr.val_noise().size(0);
  auto ogen = at::make_generator<at::CPUGeneratorImpl>(cfg.seed + 5);
  const Tensor on = tasks_around(cfg, ogen, V, cfg.ood_factor * cfg.gamma_deph[1], cfg.ood_factor * cfg.gamma_relax[1],
                                 cfg.ood_spread, pr.dtype());
  const auto oc = tr.adapt_curve(theta, on, tr.eval_adapt());
  const Tensor o_adapted = tr.pulses(oc.phi, tr.features(on)).detach();
  Tensor o_robust;
  {
    torch::NoGradGuard ng;
    o_robust = pr.fidelity(robust, on);
  }
  const Tensor ostarts = torch::cat({robust.unsqueeze(0).expand({V, -1, -1}), o_adapted}, 0).contiguous();
  const Tensor og = grape(pr, tr.policy(), ostarts, torch::cat({on, on}, 0), {cfg.grape_iterations, cfg.grape_lr}).first;
  json g = gap_json(oc.fidelity, o_robust, torch::maximum(og.slice(0, 0, V), og.slice(0, V, 2 * V)), on);
  g["centre"] = {cfg.ood_factor * cfg.gamma_deph[1], cfg.ood_factor * cfg.gamma_relax[1]};
  g["spread"] = cfg.ood_spread;
  return g;
}

Baselines evaluate_against_baselines(Trainer& tr, const Config& cfg) {
  Baselines b;
  const bool best = cfg.checkpoint_policy == "best" && tr.has_best();
  const Tensor theta = best ? tr.best_theta() : tr.theta();
  b.selected = best ? json{{"policy", "best"}, {"selection", tr.best_json()}}
                    : json{{"policy", "final"}, {"iteration", cfg.iterations}};
  const Problem& pr = tr.problem();
  const Tensor& vn = tr.val_noise();
  const int64_t V = vn.size(0);
  auto t0 = Clock::now();
  b.val = tr.validate(theta);
  const Tensor feats = tr.features(vn);
  b.meta_before = tr.pulses(theta.expand({V, theta.size(0)}), feats).detach();
  b.meta_adapted = tr.pulses(b.val.adapted, feats).detach();
  b.val_s = seconds_since(t0);

  t0 = Clock::now();
  auto rgen = at::make_generator<at::CPUGeneratorImpl>(cfg.seed + 3);
  const Tensor robust0 =
      (torch::rand({pr.n_segments(), pr.n_controls()}, rgen, torch::TensorOptions().dtype(pr.dtype())) * 2 - 1) * 2.0;
  b.robust = robust_pulse(
      pr, tr.policy(), robust0, [&] { return tr.sample(rgen, cfg.meta_batch); }, cfg.robust_iterations, cfg.robust_lr);
  {
    torch::NoGradGuard ng;
    b.f_robust = pr.fidelity(b.robust, vn);
  }
  b.robust_s = seconds_since(t0);

  // GRAPE from two starts per task (the robust pulse and the meta-adapted pulse), one batch.
  t0 = Clock::now();
  const Tensor starts = torch::cat({b.robust.unsqueeze(0).expand({V, -1, -1}), b.meta_adapted}, 0).contiguous();
  auto [gf, gu] = grape(pr, tr.policy(), starts, torch::cat({vn, vn}, 0), {cfg.grape_iterations, cfg.grape_lr});
  b.from_meta = gf.slice(0, V, 2 * V) > gf.slice(0, 0, V);
  b.f_grape = torch::where(b.from_meta, gf.slice(0, V, 2 * V), gf.slice(0, 0, V));
  b.u_grape = torch::where(b.from_meta.view({-1, 1, 1}), gu.slice(0, V, 2 * V), gu.slice(0, 0, V));

  b.adaptation = {{"adapt", {{"optimizer", cfg.adapt_optimizer}, {"lr", cfg.adapt_lr},
                             {"grad_clip", cfg.adapt_grad_clip}, {"steps", cfg.adapt_steps}}},
                  {"in_distribution", gap_json(b.val.curve, b.f_robust, b.f_grape, vn)}};
  if (cfg.ood_factor > 0) b.adaptation["out_of_distribution"] = out_of_distribution(tr, cfg, theta, b.robust);
  b.grape_s = seconds_since(t0);
  return b;
}

json validation_json(const Trainer& tr, const Config& cfg, const Baselines& b) {
  const Tensor vn64 = tr.val_noise().to(torch::kFloat64);
  json tasks = json::array();
  for (int64_t k = 0; k < vn64.size(0); ++k) {
    const double fa = b.val.after[k].item<double>(), fg = b.f_grape[k].item<double>();
    tasks.push_back({{"gamma_deph", vn64[k][0].item<double>()},
                     {"gamma_relax", vn64[k][1].item<double>()},
                     {"noise", doubles(vn64[k])},
                     {"fidelity_before", b.val.before[k].item<double>()},
                     {"fidelity_after", fa},
                     {"fidelity_robust", b.f_robust[k].item<double>()},
                     {"fidelity_grape", fg},
                     {"grape_best_start", b.from_meta[k].item<bool>() ? "meta_adapted" : "robust"},
                     {"gap", fg - fa}});
  }
  const Tensor gap = b.f_grape.to(torch::kFloat64) - b.val.after.to(torch::kFloat64);
  return {{"tasks", tasks},
          {"mean_before", mean_of(b.val.before)},
          {"mean_after", mean_of(b.val.after)},
          {"mean_robust", mean_of(b.f_robust)},
          {"mean_grape", mean_of(b.f_grape)},
          {"mean_gap", gap.mean().item<double>()},
          {"max_gap", gap.max().item<double>()},
          {"adapt_steps", cfg.adapt_steps}};
}

// The pulses (CSV and JSON) and the qfleet eval problems of the adapted pulses.
void write_pulses(const Trainer& tr, const Config& cfg, const Baselines& b, const fs::path& out) {
  const Problem& pr = tr.problem();
  const Tensor& vn = tr.val_noise();
  const Tensor vn64 = vn.to(torch::kFloat64);
  const std::vector<std::pair<std::string, Tensor>> sets = {
      {"robust", b.robust}, {"meta_before", b.meta_before}, {"meta_adapted", b.meta_adapted}, {"grape", b.u_grape}};
  write_file_atomic((out / "pulses.csv").string(), csv_pulses(pr, sets, vn));
  json pj = {{"segment_duration", pr.segment_duration()},
             {"controls", pr.control_names()},
             {"robust", tensor_json(b.robust)},
             {"tasks", json::array()}};
  for (int64_t k = 0; k < vn.size(0); ++k)
    pj["tasks"].push_back({{"gamma_deph", vn64[k][0].item<double>()},
                           {"gamma_relax", vn64[k][1].item<double>()},
                           {"meta_before", tensor_json(b.meta_before[k])},
                           {"meta_adapted", tensor_json(b.meta_adapted[k])},
                           {"grape", tensor_json(b.u_grape[k])}});
  write_file_atomic((out / "pulses.json").string(), pj.dump() + "\n");
  const auto probs = pr.eval_problems(b.meta_adapted, vn);
  for (std::size_t i = 0; i < probs.size(); ++i) {
    const std::string name = probs.size() == 1 ? "meta_adapted.json"
                                               : "meta_adapted_" + cfg.input_states[i] + ".json";
    write_file_atomic((out / "eval" / name).string(), probs[i].dump() + "\n");
  }
}

}  // namespace

app::OutputFiles output_files() {
  return {{"report.json", kCheckpointFile, "checkpoint.json", "pulses.csv", "pulses.json", "eval/meta_adapted*.json"},
          {"train_log.jsonl", "training_curve.png", "pulses.png", "fidelity_vs_noise.png", "adaptation_gap.png",
           "gap_vs_k.png"}};  // (checkpoint.json: an older qfleet's; the figures: python -m qfleet.meta_control.plot)
}

app::RunClaim output_claim(const Config& cfg, const RunOptions& options) {
  app::RunClaim c;
  c.command = "qfleet-meta";
  c.config = cfg.json;
  c.output_key = "output_dir";
  c.files = output_files();
  c.resume = options.resume;
  c.overwrite = options.overwrite;
  c.ways = options.ways;
  return c;
}

RunResult run(const Config& requested, const RunOptions& options) {
  const app::RunClock clock;
  if (requested.threads > 0) torch::set_num_threads(static_cast<int>(requested.threads));
  // Several processes (--nproc, torchrun): each runs its share of the meta-batch's tasks;
  // rank 0 validates, writes checkpoints and reports.
  const auto dist = qfleet::train::dist_from_env();
  std::unique_ptr<qfleet::train::ProcessGroup> group;
  if (dist && dist->world_size > 1) {
    if (dist->world_size > max_processes(requested))
      throw ConfigError(std::to_string(dist->world_size) + " processes: a run with meta_batch = " +
                        std::to_string(requested.meta_batch) + " takes at most " + std::to_string(max_processes(requested)) +
                        " (min(meta_batch, 8))");
    group = std::make_unique<qfleet::train::ProcessGroup>(*dist);
  }
  const bool lead = group == nullptr || group->rank() == 0;
  const int processes = group ? group->size() : 1;
  std::optional<app::OutputFolder> held;  // (the ranks that do not write leave it to rank 0)
  if (lead && !options.holds_folder) held.emplace(requested.output_dir, output_claim(requested, options));
  Config cfg = requested;  // the device resolved; cfg.json keeps what was asked
  std::string device_why;
  std::tie(cfg.device, device_why) = resolve_device(requested, group.get());
  std::optional<Trainer> trainer;
  app::doing(
      [&] {
        return "setting up the problem and the policy (system = " + cfg.system + ", solver = " + cfg.solver +
               ", precision = " + cfg.precision + ", device = " + cfg.device + ")";
      },
      [&] {
        trainer.emplace(cfg);
        trainer->set_group(group.get());
        check_memory(*trainer, cfg, processes);
      });
  Trainer& tr = *trainer;
  const fs::path out(cfg.output_dir);
  fs::create_directories(out);

  MetaTraining training(tr, cfg, options, lead, out);
  const Training t = app::run_lifecycle(training);
  RunResult result;
  result.complete = t.it == cfg.iterations;
  if (!lead) {  // the other ranks are done: rank 0 runs the baselines and reports
    if (group) group->barrier();
    result.report = {{"rank", group->rank()}, {"processes", processes}};
    return result;
  }
  if (group) group->barrier();
  if (!result.complete) {
    result.report = {{"stopped_at_iteration", t.it}, {"checkpoint", (out / kCheckpointFile).string()}};
    return result;
  }
  const Baselines b = app::doing(
      [&] {
        return "the robust pulse and GRAPE baselines (robust_iterations = " + std::to_string(cfg.robust_iterations) +
               ", grape_iterations = " + std::to_string(cfg.grape_iterations) + ", device = " + cfg.device + ")";
      },
      [&] { return evaluate_against_baselines(tr, cfg); });
  const Problem& pr = tr.problem();
  json report = app::report_header(options.app, cfg.json, cfg.seed, clock);
  report.update({
      {"system", {{"name", cfg.system},
                  {"dim", pr.dim()},
                  {"n_segments", pr.n_segments()},
                  {"segment_duration", pr.segment_duration()},
                  {"controls", pr.control_names()}}},
      {"solver", {{"name", cfg.solver}, {"dt", cfg.dt}, {"precision", cfg.precision}}},
      {"fidelity_definition", pr.fidelity_definition()},
      {"algorithm", cfg.algorithm},
      {"device", {{"requested", requested.device}, {"used", cfg.device}, {"why", device_why},
                  {"meta_step", tr.graph_mode() ? "graph" : "eager"}, {"graph", tr.graph_status()}}},
      {"threads", {{"torch", torch::get_num_threads()}, {"engine", cfg.threads}}},
      {"policy_parameters", tr.policy().size()},
      {"training_run", {{"processes", processes},
                        {"iterations_this_run", t.stop - t.first},
                        {"host_syncs_of_the_meter", t.host_syncs},
                        {"log", "train_log.jsonl"}}},
      {"timings_s", {{"training", t.train_s},
                     {"per_iteration_ms", cfg.iterations > 0 ? 1e3 * t.train_s / double(cfg.iterations) : 0.0},
                     {"validation", b.val_s},
                     {"robust_baseline", b.robust_s},
                     {"grape", b.grape_s},
                     {"total_this_run", report["wall_seconds"]}}},
      {"curve", curve_json(t.curve)},
      {"selected_policy", b.selected},
      {"adaptation", b.adaptation},
      {"conclusion", conclusion(b.adaptation)},
      {"validation", validation_json(tr, cfg, b)}});
  write_file_atomic((out / "report.json").string(), report.dump(2) + "\n");
  write_pulses(tr, cfg, b, out);
  result.report = report;
  return result;
}

}  // namespace qfleet::meta
