// The qGAN's training run (qgan.hpp): generator program, discriminator, the epoch on
// qfleet::train's StepRunner, checkpoints with resume, the report.
#include "qgan.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>

#include "qfleet/device_lowering.hpp"
#include "qfleet/json_problem.hpp"
#include "qfleet/names.hpp"
#include "qfleet/noise_model.hpp"
#include "qfleet/torch.hpp"
#include "qfleet/train.hpp"
#include "json_io.hpp"
#include "common/memory_check.hpp"
#include "common/lifecycle.hpp"
#include "common/report_header.hpp"

namespace qfleet::qgan {
namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

std::vector<int64_t> default_hidden(const Target& t) {
  if (t.name == "image") return {128, 64};
  if (t.rows > 1) return {64, 32};
  return {32, 16};
}

namespace {

// The generator's compiled program: the ansatz, or its device-lowered form with the
// noise model's channels (a density-matrix program).
struct GeneratorProgram {
  c10::intrusive_ptr<nn::CircuitProgram> program;
  json info;
};

GeneratorProgram make_generator(const TrainConfig& c, int n_qubits) {
  const Circuit logical = generator_circuit({n_qubits, c.reps});
  CompileOptions opt;
  opt.precision = value_named(kPrecisionNames, c.precision, "precision");
  opt.num_threads = c.threads;
  GeneratorProgram g;
  g.info = {{"n_qubits", n_qubits}, {"reps", c.reps}, {"n_weights", logical.n_weights()},
            {"ansatz", "H on every wire; reps x [RY layer, CNOT chain]; RY layer (Zoufal et al.'s real-amplitude generator)"}};
  if (c.noise_model.empty()) {
    g.program = c10::make_intrusive<nn::CircuitProgram>(logical, opt);
    g.info["noise_model"] = nullptr;
  } else {
    const NoiseModel model = read_noise_model_file(c.noise_model);
    const LoweredCircuit low = lower_to_device(logical, model);
    g.program = c10::make_intrusive<nn::CircuitProgram>(apply_noise_model(low.circuit, low.model), opt);
    g.info["noise_model"] = model.name;
    g.info["physical_qubits"] = low.physical;
    g.info["swaps"] = low.swaps;
    g.info["basis_gates"] = {{"one_qubit", low.one_qubit_gates}, {"two_qubit", low.two_qubit_gates}};
  }
  g.info["simulator"] = g.program->program.simulator() == Simulator::density_matrix ? "density_matrix" : "statevector";
  g.info["precision"] = c.precision;
  return g;
}

torch::nn::Sequential make_discriminator(int64_t in, const std::vector<int64_t>& hidden) {
  torch::nn::Sequential d;
  int64_t w = in;
  for (int64_t h : hidden) {
    d->push_back(torch::nn::Linear(w, h));
    d->push_back(torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)));
    w = h;
  }
  d->push_back(torch::nn::Linear(w, 1));
  return d;
}

// Seeded shots of the generator at each row of `weights` [rows, P], as histograms [rows, K].
torch::Tensor shot_histograms(const Program& prog, const torch::Tensor& weights, int64_t shots, uint64_t seed, int64_t k) {
  const torch::Tensor w = weights.to(torch::kFloat64).contiguous();
  const auto rows = std::size_t(w.size(0));
  std::vector<uint64_t> outcomes(rows * std::size_t(shots));
  // On the measured wires in their order: on a device they are a permutation of its wires.
  const auto& measured = prog.circuit().measurements().at(0).wires;
  prog.sample<double>(BatchArgs<double>{rows, {}, std::span<const double>(w.data_ptr<double>(), std::size_t(w.numel()))},
                      measured, std::size_t(shots), seed, std::span<uint64_t>(outcomes));
  torch::Tensor h = torch::empty({int64_t(rows), k}, torch::kFloat64);
  for (std::size_t r = 0; r < rows; ++r) {
    const auto first = outcomes.begin() + std::ptrdiff_t(r * std::size_t(shots));
    const Distribution row = histogram(std::vector<uint64_t>(first, first + shots), std::size_t(k));
    std::copy(row.begin(), row.end(), h[int64_t(r)].data_ptr<double>());
  }
  return h;
}

}  // namespace

std::vector<double> parameter_shift_gradient(const Program& prog, const std::vector<double>& w,
                                             const std::vector<double>& reward, int64_t shots, uint64_t seed) {
  const auto P = int64_t(w.size()), K = int64_t(reward.size());
  if (P != prog.n_weights() || K != prog.n_outputs())
    throw std::invalid_argument("parameter_shift_gradient: weights or rewards do not fit the program");
  // Each weight drives one RY (or RZ) gate, whose generator has eigenvalues +-1/2, so
  // dE/dw_j = (E(w + pi/2 e_j) - E(w - pi/2 e_j)) / 2 exactly (Mitarai et al., PRA 98,
  // 032309 (2018); Schuld et al., PRA 99, 032331 (2019)), with or without channels after
  // the gate; each E is estimated from `shots` samples of its shifted circuit.
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  const torch::Tensor base = torch::tensor(w, f64);
  const torch::Tensor shift = torch::eye(P, f64) * (M_PI / 2);
  const torch::Tensor batch = torch::cat({base.unsqueeze(0) + shift, base.unsqueeze(0) - shift});
  const torch::Tensor e = torch::mv(shot_histograms(prog, batch, shots, seed, K), torch::tensor(reward, f64));
  const torch::Tensor g = ((e.narrow(0, 0, P) - e.narrow(0, P, P)) / 2).contiguous();
  return std::vector<double>(g.data_ptr<double>(), g.data_ptr<double>() + P);
}

namespace {

// One qGAN training run (app::run_lifecycle): set up (target, generator program, the
// discriminator, optimizers), resume, one step per epoch with checkpoints, the report. The random draws' order is the run's contract (a
// resumed run is bit-identical): the generator's weights, then the discriminator's,
// from the default generator seeded with seed; each epoch's shots from seeds of its own.
class QganRun {
 public:
  explicit QganRun(const TrainConfig& cfg_in);
  int64_t resume();
  train::Metrics step(int64_t epoch);
  void checkpoint(int64_t done);
  train::RunnerOptions runner_options() const;
  json finish(const app::Loop& loop);
  std::string settings() const {  // (named by an error while running: app::run_lifecycle)
    return "shots = " + std::to_string(cfg_.shots) + ", precision = " + cfg_.precision + ", device = " + device_.str();
  }

 private:
  struct Generated {
    torch::Tensor exact, fake, real;  // the generator's exact distribution, the "fake" and "real" data
    uint64_t seed = 0;
    double ms = 0;
  };
  Generated generate(int64_t epoch);
  torch::Tensor discriminator_steps(const torch::Tensor& real_p, const torch::Tensor& fake_dev);
  torch::Tensor generator_step(const Generated& g, const torch::Tensor& fake_dev, double& gen_ms);
  torch::Tensor d_logits() { return disc_->forward(features_).squeeze(1).to(torch::kFloat64); }
  void flush_history();
  void check_memory() const;

  TrainConfig cfg_;
  app::RunClock run_clock_;  // (reset once the settings are checked)
  Target target_;
  std::string device_why_;
  torch::Device device_{torch::kCPU};
  train::PrecisionPolicy precision_;
  GeneratorProgram gen_;
  int64_t K_ = 0, P_ = 0;
  torch::Tensor w_, features_, p_target_dev_, no_inputs_;
  torch::nn::Sequential disc_{nullptr};
  std::unique_ptr<torch::optim::Adam> opt_g_, opt_d_;
  std::string ckpt_, hist_path_, history_text_;  // (history_text_: the history as the checkpoint holds it)
  train::TrainState state_;
  json history_ = json::array();
  // Per-epoch losses stay on the discriminator's device until a checkpoint (one transfer).
  std::vector<torch::Tensor> pending_losses_;
  std::vector<json> pending_rows_;
  double generator_ms_ = 0;
  int64_t ran_ = 0;
};

QganRun::QganRun(const TrainConfig& cfg_in) : cfg_(cfg_in) {
  validate(cfg_);
  if (cfg_.threads > 0) torch::set_num_threads(cfg_.threads);
  run_clock_ = app::RunClock();
  target_ = make_target(cfg_.target);
  if (cfg_.hidden.empty()) cfg_.hidden = default_hidden(target_);
  // Deeper generators for wider registers: reps = 2 reaches the 3-qubit log-normal to 1e-11 by
  // direct minimisation; the 8 x 8 Gaussian needs 4 (KL 0.006 after 1000 epochs, against 0.096 at 2).
  if (cfg_.reps < 0) cfg_.reps = std::max(2, target_.n_qubits - 2);
  if (value_named(kPrecisionNames, cfg_.precision, "precision") == Precision::complex64 && cfg_.shots > 0)
    throw std::invalid_argument("shots mode samples in complex128; leave precision at complex128");
  device_ = train::device_from_setting(cfg_.device, &device_why_);
  precision_ = train::precision_policy(device_);
  train::apply_backend_switches(precision_);

  gen_ = make_generator(cfg_, target_.n_qubits);
  K_ = target_.rows * target_.cols, P_ = gen_.program->program.n_weights();
  const auto real = gen_.program->dtype();
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  torch::manual_seed(cfg_.seed);
  // Weights start near zero: the generator starts at the uniform distribution of its
  // Hadamard layer, as in Zoufal et al.
  w_ = (torch::rand({P_}, f64) * 0.2 - 0.1).to(real).set_requires_grad(true);
  check_memory();
  disc_ = make_discriminator(target_.n_features, cfg_.hidden);
  disc_->to(device_);
  features_ = torch::from_blob(const_cast<double*>(target_.features.data()), {K_, target_.n_features}, f64)
                  .to(device_, torch::kFloat32);
  p_target_dev_ = torch::from_blob(const_cast<double*>(target_.probabilities.data()), {K_}, f64).clone().to(device_);
  no_inputs_ = torch::zeros({1, 0}, torch::TensorOptions().dtype(real));
  opt_g_ = std::make_unique<torch::optim::Adam>(std::vector<torch::Tensor>{w_},
                                                torch::optim::AdamOptions(cfg_.lr_g).betas({cfg_.beta1, cfg_.beta2}));
  opt_d_ = std::make_unique<torch::optim::Adam>(disc_->parameters(),
                                                torch::optim::AdamOptions(cfg_.lr_d).betas({cfg_.beta1, cfg_.beta2}));

  fs::create_directories(cfg_.out);
  ckpt_ = (fs::path(cfg_.out) / "checkpoint.pt").string();
  hist_path_ = (fs::path(cfg_.out) / "history.json").string();
  json hashed = cfg_.to_json();
  hashed.erase("epochs");  // --resume --epochs N extends a run
  state_.config = hashed.dump();
  state_.modules = {{"discriminator", disc_.ptr().get()}};
  state_.optimizers = {{"adam_g", opt_g_.get()}, {"adam_d", opt_d_.get()}};
  state_.tensors = {{"generator_weights", w_}};
  state_.texts = {{"history", &history_text_}};
}

// What the run holds at once, known before it allocates: the discriminator's float32
// parameters with their gradients and Adam's two moments, on its device; with shots, the
// parameter shift's 2 P circuits' outcomes (8 bytes each) on the CPU.
void QganRun::check_memory() const {
  double params = 0;
  int64_t w = target_.n_features;
  for (int64_t h : cfg_.hidden) params += double(w + 1) * double(h), w = h;
  params += double(w + 1);
  app::check_bytes_fit(device_, "hidden", params * 4 * 4,
                       "a discriminator of " + std::to_string(int64_t(params)) + " parameters (with gradients and Adam's moments)");
  if (cfg_.shots > 0)
    app::check_bytes_fit(torch::kCPU, "shots", 2 * double(P_) * double(cfg_.shots) * 8,
                         std::to_string(cfg_.shots) + " shots of the parameter shift's " + std::to_string(2 * P_) + " circuits");
}

int64_t QganRun::resume() {
  if (!cfg_.resume) return 0;
  train::load_checkpoint(ckpt_, state_);
  history_ = app::history_from_checkpoint(history_text_, state_.step, hist_path_);
  return state_.step;
}

// The generator's exact distribution (for the metrics, and the step in exact mode; the
// shots mode's gradient comes from the parameter shift, so no graph is kept there), and
// the data the discriminator sees: exact, or shots of the generator and of the target.
QganRun::Generated QganRun::generate(int64_t epoch) {
  const auto t0 = Clock::now();
  Generated g;
  g.exact = [&] {
    std::optional<torch::NoGradGuard> no_graph;
    if (cfg_.shots > 0) no_graph.emplace();
    return nn::circuit_forward(gen_.program, no_inputs_, w_).squeeze(0).to(torch::kFloat64);
  }();
  g.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  g.fake = g.exact.detach(), g.real = p_target_dev_;
  g.seed = cfg_.seed * 0x9E3779B97F4A7C15ull + uint64_t(epoch);
  if (cfg_.shots > 0) {
    g.fake = shot_histograms(gen_.program->program, w_.detach().unsqueeze(0), cfg_.shots, g.seed, K_).squeeze(0);
    std::mt19937_64 rng(g.seed ^ 0xD1B54A32D192ED03ull);  // the "real data": shots of the target
    std::discrete_distribution<uint64_t> draw(target_.probabilities.begin(), target_.probabilities.end());
    std::vector<uint64_t> drawn(std::size_t(cfg_.shots));
    for (auto& x : drawn) x = draw(rng);
    g.real = torch::tensor(histogram(drawn, std::size_t(K_)), torch::TensorOptions().dtype(torch::kFloat64)).to(device_);
  }
  return g;
}

torch::Tensor QganRun::discriminator_steps(const torch::Tensor& real_p, const torch::Tensor& fake_dev) {
  torch::Tensor loss_d;
  train::AutocastScope autocast(precision_);
  for (int k = 0; k < cfg_.d_steps; ++k) {
    const torch::Tensor z = d_logits();
    loss_d = -(real_p * torch::log_sigmoid(z) + fake_dev * torch::log_sigmoid(-z)).sum();
    opt_d_->zero_grad();
    loss_d.backward();
    opt_d_->step();
  }
  return loss_d;
}

// loss_G = -E[log D]: through the engine's adjoint vjp (exact), or its parameter-shift
// gradient from shots. Adds the engine's time to gen_ms.
torch::Tensor QganRun::generator_step(const Generated& g, const torch::Tensor& fake_dev, double& gen_ms) {
  torch::Tensor log_d;
  {
    torch::NoGradGuard ng;
    train::AutocastScope autocast(precision_);
    log_d = torch::log_sigmoid(d_logits());
  }
  opt_g_->zero_grad();
  torch::Tensor loss_g;
  const auto t1 = Clock::now();
  if (cfg_.shots == 0) {
    loss_g = -(g.exact.to(device_) * log_d).sum();
    loss_g.backward();
  } else {
    const torch::Tensor wd = w_.detach().to(torch::kFloat64).contiguous(), ld = log_d.cpu().contiguous();
    const auto grad = parameter_shift_gradient(
        gen_.program->program, std::vector<double>(wd.data_ptr<double>(), wd.data_ptr<double>() + P_),
        std::vector<double>(ld.data_ptr<double>(), ld.data_ptr<double>() + K_), cfg_.shots, g.seed ^ 0xA0761D6478BD642Full);
    w_.mutable_grad() = -torch::tensor(grad, torch::TensorOptions().dtype(torch::kFloat64)).to(w_.dtype());
    loss_g = -(fake_dev * log_d).sum();
  }
  gen_ms += std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
  opt_g_->step();
  return loss_g;
}

train::Metrics QganRun::step(int64_t epoch) {
  const Generated g = generate(epoch);
  double gen_ms = g.ms;
  const torch::Tensor fake_dev = g.fake.to(device_);
  const torch::Tensor loss_d = discriminator_steps(g.real, fake_dev);
  const torch::Tensor loss_g = generator_step(g, fake_dev, gen_ms);
  generator_ms_ += gen_ms;
  ++ran_;
  // Metrics of the exact distribution, on the host (the generator runs there).
  const torch::Tensor pg = g.exact.detach();
  const Distribution pv(pg.data_ptr<double>(), pg.data_ptr<double>() + K_);
  const double kl = kl_divergence(pv, target_.probabilities), klr = kl_divergence(target_.probabilities, pv);
  const double ks = ks_distance(pv, target_.probabilities, target_.rows);
  const double secs = std::chrono::duration<double>(Clock::now() - run_clock_.steady).count();
  pending_rows_.push_back({{"epoch", epoch + 1}, {"kl", number(kl)}, {"kl_reverse", number(klr)}, {"ks", ks}, {"seconds", secs}});
  pending_losses_.push_back(torch::stack({loss_g.detach(), loss_d.detach()}));
  const auto on = torch::TensorOptions().dtype(torch::kFloat64).device(device_);
  return {{"kl", "ks", "loss_g", "loss_d"}, {torch::tensor(kl, on), torch::tensor(ks, on), loss_g.detach(), loss_d.detach()}};
}

void QganRun::flush_history() {
  if (pending_rows_.empty()) return;
  const torch::Tensor l = torch::stack(pending_losses_).cpu();  // one transfer
  for (std::size_t i = 0; i < pending_rows_.size(); ++i) {
    pending_rows_[i]["loss_g"] = l[int64_t(i)][0].item<double>();
    pending_rows_[i]["loss_d"] = l[int64_t(i)][1].item<double>();
    history_.push_back(pending_rows_[i]);
  }
  pending_rows_.clear();
  pending_losses_.clear();
}

void QganRun::checkpoint(int64_t done) {
  flush_history();
  state_.step = done;
  history_text_ = history_.dump();
  train::save_checkpoint(ckpt_, state_);
  train::write_file_atomic(hist_path_, history_.dump(1));
}

train::RunnerOptions QganRun::runner_options() const {
  train::RunnerOptions ro;
  ro.steps = cfg_.epochs;
  ro.sync_every = std::max<int64_t>(1, std::min<int64_t>(50, cfg_.epochs / 10));
  ro.progress = cfg_.progress;
  ro.checkpoint_every = cfg_.checkpoint_every;
  ro.log_path = (fs::path(cfg_.out) / "train_log.jsonl").string();
  return ro;
}

json QganRun::finish(const app::Loop& loop) {
  const double train_s = loop.seconds;
  torch::Tensor pg;  // the final distribution at the final weights
  {
    torch::NoGradGuard ng;
    pg = nn::circuit_forward(gen_.program, no_inputs_, w_).squeeze(0).to(torch::kFloat64).contiguous();
  }
  const Distribution pv(pg.data_ptr<double>(), pg.data_ptr<double>() + K_);
  json report = app::report_header("qfleet-qgan train", cfg_.to_json(), cfg_.seed, run_clock_);
  report["target"] = target_json(target_);
  json g = gen_.info;
  const torch::Tensor wd = w_.detach().to(torch::kFloat64).contiguous();
  g["weights"] = std::vector<double>(wd.data_ptr<double>(), wd.data_ptr<double>() + P_);
  report["generator"] = g;
  report["discriminator"] = {{"hidden", cfg_.hidden}, {"inputs", target_.n_features}, {"activation", "LeakyReLU(0.2)"}};
  report["history"] = history_;
  // The best KL the generator reached: history row e holds its distribution going into
  // epoch e (after e - 1 updates), the final one is after the last update; so the best
  // is never worse than the final, and it is named by the updates that led to it.
  const double final_kl = kl_divergence(pv, target_.probabilities);
  double best = std::isfinite(final_kl) ? final_kl : kInfinity;
  int64_t best_after = int64_t(history_.size());
  for (const auto& h : history_)
    if (h["kl"].is_number() && h["kl"].get<double>() < best) best = h["kl"].get<double>(), best_after = h["epoch"].get<int64_t>() - 1;
  report["final"] = {{"probabilities", pv},
                     {"kl", number(final_kl)},
                     {"kl_reverse", number(kl_divergence(target_.probabilities, pv))},
                     {"ks", ks_distance(pv, target_.probabilities, target_.rows)},
                     {"js_distance", js_distance(pv, target_.probabilities)},
                     {"total_variation", total_variation(pv, target_.probabilities)},
                     {"epochs", int64_t(history_.size())},
                     {"best_kl", number(best)},
                     {"best_after_epochs", best_after}};
  report["timing"] = {{"seconds", report["wall_seconds"]},
                      {"train_seconds", train_s},
                      {"epochs_run", ran_},
                      {"epoch_ms", ran_ ? 1e3 * train_s / double(ran_) : 0.0},
                      {"generator_ms_per_epoch", ran_ ? generator_ms_ / double(ran_) : 0.0},
                      {"generator", "forward + adjoint backward (exact) or the 2P + 1 sampled circuits (shots), engine calls only"},
                      {"device", device_.str()},
                      {"device_reason", device_why_},
                      {"precision_policy", precision_.rule},
                      {"resumed_from_epoch", loop.first}};
  train::write_file_atomic((fs::path(cfg_.out) / "report.json").string(), report.dump(1));
  return report;
}

}  // namespace

json train(const TrainConfig& cfg) {
  const auto setup = [&] {
    return "setting up the run: the target, the generator and the discriminator (shots = " + std::to_string(cfg.shots) +
           ", device = " + cfg.device + ")";
  };
  return app::doing(setup, [&] {  // (the run's own phases, inside, name themselves)
    QganRun run(cfg);
    return app::run_lifecycle(run);
  });
}

}  // namespace qfleet::qgan
