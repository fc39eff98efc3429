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
#include "qfleet/noise_model.hpp"
#include "qfleet/torch.hpp"
#include "qfleet/train.hpp"
#include "json_io.hpp"
#include "common/report_header.hpp"

namespace qfleet::qgan {
namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

json TrainConfig::to_json() const {
  return {{"target", target.name},         {"qubits", target.qubits},   {"image", target.image},
          {"fourier_features", target.fourier_features},
          {"reps", reps},                  {"epochs", epochs},          {"d_steps", d_steps},
          {"lr_g", lr_g},                  {"lr_d", lr_d},              {"beta1", beta1},
          {"beta2", beta2},                {"hidden", hidden},          {"shots", shots},
          {"noise_model", noise_model},    {"precision", precision},    {"seed", seed},
          {"device", device}};
}

void validate(const TrainConfig& c) {
  auto bad = [](const std::string& what) { throw std::invalid_argument(what); };
  if (c.epochs < 1 || c.epochs > 1000000) bad("epochs = " + std::to_string(c.epochs) + ": 1 to 1000000");
  if (c.d_steps < 1 || c.d_steps > 100) bad("d_steps = " + std::to_string(c.d_steps) + ": 1 to 100");
  for (double lr : {c.lr_g, c.lr_d})
    if (!(lr > 0 && lr < 10)) bad("learning rates (lr_g, lr_d) must be in (0, 10)");
  if (!(c.beta1 >= 0 && c.beta1 < 1) || !(c.beta2 >= 0 && c.beta2 < 1)) bad("beta1, beta2 must be in [0, 1)");
  for (int64_t h : c.hidden)
    if (h < 1 || h > 4096) bad("hidden widths must be 1 to 4096");
  if (c.hidden.size() > 8) bad("at most 8 hidden layers");
  if (c.shots < 0 || c.shots > (int64_t{1} << 24)) bad("shots = " + std::to_string(c.shots) + ": 0 (exact) to 2^24");
  if (c.precision != "complex128" && c.precision != "complex64") bad("precision \"" + c.precision + "\": complex128 or complex64");
  if (c.device != "cpu" && c.device != "cuda" && c.device != "auto") bad("device \"" + c.device + "\": cpu, cuda or auto");
  if (c.checkpoint_every < 1) bad("checkpoint_every must be at least 1");
  if (c.reps < -1 || c.reps > 64) bad("reps = " + std::to_string(c.reps) + ": 0 to 64 (-1: the default)");
}

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
  opt.precision = c.precision == "complex64" ? Precision::complex64 : Precision::complex128;
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

json train(const TrainConfig& cfg_in) {
  TrainConfig cfg = cfg_in;
  validate(cfg);
  if (cfg.threads > 0) torch::set_num_threads(cfg.threads);
  const auto t_start = Clock::now();
  const Target target = make_target(cfg.target);
  if (cfg.hidden.empty()) cfg.hidden = default_hidden(target);
  // Deeper generators for wider registers: reps = 2 reaches the 3-qubit log-normal to 1e-11 by
  // direct minimisation; the 8 x 8 Gaussian needs 4 (KL 0.006 after 1000 epochs, against 0.096 at 2).
  if (cfg.reps < 0) cfg.reps = std::max(2, target.n_qubits - 2);
  if (cfg.precision == "complex64" && cfg.shots > 0) throw std::invalid_argument("shots mode samples in complex128; leave precision at complex128");
  std::string device_why;
  const torch::Device device = train::device_from_setting(cfg.device, &device_why);
  const train::PrecisionPolicy precision = train::precision_policy(device);
  train::apply_backend_switches(precision);

  const GeneratorProgram gen = make_generator(cfg, target.n_qubits);
  const Program& prog = gen.program->program;
  const int64_t K = target.rows * target.cols, P = prog.n_weights();
  const auto real = gen.program->dtype();
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);

  torch::manual_seed(cfg.seed);
  // Weights start near zero: the generator starts at the uniform distribution of its
  // Hadamard layer, as in Zoufal et al.
  torch::Tensor w = (torch::rand({P}, f64) * 0.2 - 0.1).to(real).set_requires_grad(true);
  torch::nn::Sequential disc = make_discriminator(target.n_features, cfg.hidden);
  disc->to(device);
  const torch::Tensor features =
      torch::from_blob(const_cast<double*>(target.features.data()), {K, target.n_features}, f64).to(device, torch::kFloat32);
  const torch::Tensor p_target = torch::from_blob(const_cast<double*>(target.probabilities.data()), {K}, f64).clone();
  const torch::Tensor p_target_dev = p_target.to(device);
  const torch::Tensor no_inputs = torch::zeros({1, 0}, torch::TensorOptions().dtype(real));
  torch::optim::Adam opt_g({w}, torch::optim::AdamOptions(cfg.lr_g).betas({cfg.beta1, cfg.beta2}));
  torch::optim::Adam opt_d(disc->parameters(), torch::optim::AdamOptions(cfg.lr_d).betas({cfg.beta1, cfg.beta2}));

  fs::create_directories(cfg.out);
  const std::string ckpt = (fs::path(cfg.out) / "checkpoint.pt").string();
  const std::string hist_path = (fs::path(cfg.out) / "history.json").string();
  train::TrainState state;
  json hashed = cfg.to_json();
  hashed.erase("epochs");  // --resume --epochs N extends a run
  state.config = hashed.dump();
  state.modules = {{"discriminator", disc.ptr().get()}};
  state.optimizers = {{"adam_g", &opt_g}, {"adam_d", &opt_d}};
  state.tensors = {{"generator_weights", w}};
  json history = json::array();
  int64_t first = 0;
  if (cfg.resume) {
    train::load_checkpoint(ckpt, state);
    first = state.step;
    std::ifstream h(hist_path);
    if (h) history = json::parse(h, nullptr, false);
    if (!history.is_array()) history = json::array();
    while (int64_t(history.size()) > first) history.erase(history.end() - 1);
  }

  // Per-epoch losses stay on the discriminator's device until a checkpoint (one transfer).
  std::vector<torch::Tensor> pending_losses;
  std::vector<json> pending_rows;
  double generator_ms = 0;
  int64_t ran = 0;

  auto d_logits = [&] { return disc->forward(features).squeeze(1).to(torch::kFloat64); };
  auto step = [&](int64_t epoch) -> train::Metrics {
    const auto t0 = Clock::now();
    // The generator's exact distribution (for the metrics, and the step in exact mode; the
    // shots mode's gradient comes from the parameter shift, so no graph is kept there).
    torch::Tensor pg = [&] {
      std::optional<torch::NoGradGuard> no_graph;
      if (cfg.shots > 0) no_graph.emplace();
      return nn::circuit_forward(gen.program, no_inputs, w).squeeze(0).to(torch::kFloat64);
    }();
    double gen_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    torch::Tensor fake = pg.detach(), real_p = p_target_dev;
    const uint64_t epoch_seed = cfg.seed * 0x9E3779B97F4A7C15ull + uint64_t(epoch);
    if (cfg.shots > 0) {
      fake = shot_histograms(prog, w.detach().unsqueeze(0), cfg.shots, epoch_seed, K).squeeze(0);
      std::mt19937_64 rng(epoch_seed ^ 0xD1B54A32D192ED03ull);  // the "real data": shots of the target
      std::discrete_distribution<uint64_t> draw(target.probabilities.begin(), target.probabilities.end());
      std::vector<uint64_t> drawn(std::size_t(cfg.shots));
      for (auto& x : drawn) x = draw(rng);
      real_p = torch::tensor(histogram(drawn, std::size_t(K)), f64).to(device);
    }
    const torch::Tensor fake_dev = fake.to(device);
    torch::Tensor loss_d;
    {
      train::AutocastScope autocast(precision);
      for (int k = 0; k < cfg.d_steps; ++k) {
        const torch::Tensor z = d_logits();
        loss_d = -(real_p * torch::log_sigmoid(z) + fake_dev * torch::log_sigmoid(-z)).sum();
        opt_d.zero_grad();
        loss_d.backward();
        opt_d.step();
      }
    }
    torch::Tensor log_d;
    {
      torch::NoGradGuard ng;
      train::AutocastScope autocast(precision);
      log_d = torch::log_sigmoid(d_logits());
    }
    opt_g.zero_grad();
    torch::Tensor loss_g;
    if (cfg.shots == 0) {
      loss_g = -(pg.to(device) * log_d).sum();
      const auto t1 = Clock::now();
      loss_g.backward();  // through the engine's adjoint vjp
      gen_ms += std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
    } else {
      const auto t1 = Clock::now();
      const torch::Tensor wd = w.detach().to(torch::kFloat64).contiguous(), ld = log_d.cpu().contiguous();
      const auto grad = parameter_shift_gradient(prog, std::vector<double>(wd.data_ptr<double>(), wd.data_ptr<double>() + P),
                                                 std::vector<double>(ld.data_ptr<double>(), ld.data_ptr<double>() + K), cfg.shots,
                                                 epoch_seed ^ 0xA0761D6478BD642Full);
      gen_ms += std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
      w.mutable_grad() = -torch::tensor(grad, f64).to(w.dtype());  // loss_G = -E[log D]
      loss_g = -(fake_dev * log_d).sum();
    }
    opt_g.step();
    generator_ms += gen_ms;
    ++ran;
    // Metrics of the exact distribution, on the host (the generator runs there).
    const Distribution pv(pg.detach().data_ptr<double>(), pg.detach().data_ptr<double>() + K);
    const double kl = kl_divergence(pv, target.probabilities), klr = kl_divergence(target.probabilities, pv);
    const double ks = ks_distance(pv, target.probabilities, target.rows);
    const double secs = std::chrono::duration<double>(Clock::now() - t_start).count();
    pending_rows.push_back({{"epoch", epoch + 1}, {"kl", number(kl)}, {"kl_reverse", number(klr)}, {"ks", ks}, {"seconds", secs}});
    pending_losses.push_back(torch::stack({loss_g.detach(), loss_d.detach()}));
    const auto on = torch::TensorOptions().dtype(torch::kFloat64).device(device);
    return {{"kl", "ks", "loss_g", "loss_d"},
            {torch::tensor(kl, on), torch::tensor(ks, on), loss_g.detach(), loss_d.detach()}};
  };

  auto flush_history = [&] {
    if (pending_rows.empty()) return;
    const torch::Tensor l = torch::stack(pending_losses).cpu();  // one transfer
    for (std::size_t i = 0; i < pending_rows.size(); ++i) {
      pending_rows[i]["loss_g"] = l[int64_t(i)][0].item<double>();
      pending_rows[i]["loss_d"] = l[int64_t(i)][1].item<double>();
      history.push_back(pending_rows[i]);
    }
    pending_rows.clear();
    pending_losses.clear();
  };
  auto checkpoint = [&](int64_t done) {
    flush_history();
    state.step = done;
    train::save_checkpoint(ckpt, state);
    train::write_file_atomic(hist_path, history.dump(1));
  };

  train::RunnerOptions ro;
  ro.steps = cfg.epochs;
  ro.sync_every = std::max<int64_t>(1, std::min<int64_t>(50, cfg.epochs / 10));
  ro.progress = cfg.progress;
  ro.checkpoint_every = cfg.checkpoint_every;
  ro.log_path = (fs::path(cfg.out) / "train_log.jsonl").string();
  train::StepRunner runner(ro);
  const auto t_train = Clock::now();
  runner.run(step, first, checkpoint);
  const double train_s = std::chrono::duration<double>(Clock::now() - t_train).count();

  // The final distribution at the final weights.
  torch::Tensor pg;
  {
    torch::NoGradGuard ng;
    pg = nn::circuit_forward(gen.program, no_inputs, w).squeeze(0).to(torch::kFloat64).contiguous();
  }
  const Distribution pv(pg.data_ptr<double>(), pg.data_ptr<double>() + K);
  json report = app::report_header("qfleet-qgan train", cfg.to_json(), cfg.seed);
  report["target"] = target_json(target);
  json g = gen.info;
  const torch::Tensor wd = w.detach().to(torch::kFloat64).contiguous();
  g["weights"] = std::vector<double>(wd.data_ptr<double>(), wd.data_ptr<double>() + P);
  report["generator"] = g;
  report["discriminator"] = {{"hidden", cfg.hidden}, {"inputs", target.n_features}, {"activation", "LeakyReLU(0.2)"}};
  report["history"] = history;
  double best = kInfinity;
  int64_t best_epoch = 0;
  for (const auto& h : history)
    if (h["kl"].is_number() && h["kl"].get<double>() < best) best = h["kl"].get<double>(), best_epoch = h["epoch"].get<int64_t>();
  const double kl = kl_divergence(pv, target.probabilities);
  report["final"] = {{"probabilities", pv},
                     {"kl", number(kl)},
                     {"kl_reverse", number(kl_divergence(target.probabilities, pv))},
                     {"ks", ks_distance(pv, target.probabilities, target.rows)},
                     {"js_distance", js_distance(pv, target.probabilities)},
                     {"total_variation", total_variation(pv, target.probabilities)},
                     {"epochs", int64_t(history.size())},
                     {"best_kl", number(best)},
                     {"best_epoch", best_epoch}};
  report["timing"] = {{"seconds", std::chrono::duration<double>(Clock::now() - t_start).count()},
                      {"train_seconds", train_s},
                      {"epochs_run", ran},
                      {"epoch_ms", ran ? 1e3 * train_s / double(ran) : 0.0},
                      {"generator_ms_per_epoch", ran ? generator_ms / double(ran) : 0.0},
                      {"generator", "forward + adjoint backward (exact) or the 2P + 1 sampled circuits (shots), engine calls only"},
                      {"device", device.str()},
                      {"device_reason", device_why},
                      {"precision_policy", precision.rule},
                      {"resumed_from_epoch", first}};
  train::write_file_atomic((fs::path(cfg.out) / "report.json").string(), report.dump(1));
  return report;
}

}  // namespace qfleet::qgan
