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
#include <tuple>
#include <cstring>

#include <ATen/CPUGeneratorImpl.h>
#include <sstream>

#include "qfleet/version.hpp"
#include "trainer.hpp"

namespace qfleet::meta {

using nlohmann::json;
using torch::Tensor;
namespace fs = std::filesystem;


// ---- physics -------------------------------------------------------------------------

namespace {

using Cx = std::complex<double>;
using Mat = std::vector<Cx>;  // row-major

Mat kron(const Mat& a, const Mat& b) {
  const int da = static_cast<int>(std::lround(std::sqrt(double(a.size()))));
  const int db = static_cast<int>(std::lround(std::sqrt(double(b.size()))));
  const int d = da * db;
  Mat m(std::size_t(d) * d);
  for (int i = 0; i < da; ++i)
    for (int j = 0; j < da; ++j)
      for (int k = 0; k < db; ++k)
        for (int l = 0; l < db; ++l)
          m[std::size_t(i * db + k) * d + (j * db + l)] = a[std::size_t(i) * da + j] * b[std::size_t(k) * db + l];
  return m;
}

Mat scale(Mat m, Cx s) {
  for (auto& z : m) z *= s;
  return m;
}

const Mat kI2 = {1, 0, 0, 1}, kX = {0, 1, 1, 0}, kY = {0, Cx(0, -1), Cx(0, 1), 0}, kZ = {1, 0, 0, -1},
          kLower = {0, 1, 0, 0};  // |0><1|

json entry(Cx z) { return z.imag() == 0 ? json(z.real()) : json::array({z.real(), z.imag()}); }

json matrix_json(const Mat& m) {
  const int d = static_cast<int>(std::lround(std::sqrt(double(m.size()))));
  json rows = json::array();
  for (int i = 0; i < d; ++i) {
    json row = json::array();
    for (int j = 0; j < d; ++j) row.push_back(entry(m[std::size_t(i) * d + j]));
    rows.push_back(row);
  }
  return rows;
}

std::vector<Cx> one_qubit_state(char c) {
  const double s = 1 / std::sqrt(2.0);
  switch (c) {
    case '0': return {1, 0};
    case '1': return {0, 1};
    case '+': return {s, s};
    case '-': return {s, -s};
    case 'r': return {s, Cx(0, s)};
    default: return {s, Cx(0, -s)};  // 'l'
  }
}

std::vector<Cx> product_state(const std::string& label) {
  std::vector<Cx> psi{1};
  for (char c : label) {
    const auto q = one_qubit_state(c);
    std::vector<Cx> next;
    for (auto a : psi)
      for (auto b : q) next.push_back(a * b);
    psi = next;
  }
  return psi;
}

std::vector<Cx> apply(const Mat& u, const std::vector<Cx>& psi) {
  const std::size_t d = psi.size();
  std::vector<Cx> out(d);
  for (std::size_t i = 0; i < d; ++i)
    for (std::size_t j = 0; j < d; ++j) out[i] += u[i * d + j] * psi[j];
  return out;
}

json vector_json(const std::vector<Cx>& v) {
  json a = json::array();
  for (auto z : v) a.push_back(entry(z));
  return a;
}

// Tensor -> nested JSON arrays of doubles (row-major).
json tensor_json(const Tensor& t) {
  const Tensor c = t.detach().to(torch::kFloat64).contiguous();
  if (c.dim() == 0) return c.item<double>();
  json a = json::array();
  for (int64_t i = 0; i < c.size(0); ++i) a.push_back(tensor_json(c[i]));
  return a;
}

}  // namespace

Problem::Problem(const Config& cfg)
    : qubits_(cfg.system == "qubit_x" ? 1 : 2),
      n_seg_(static_cast<int>(cfg.n_segments)),
      seg_dt_(cfg.gate_time / double(cfg.n_segments)),
      dtype_(cfg.precision == "complex64" ? torch::kFloat32 : torch::kFloat64) {
  auto on = [&](const Mat& op, int q) { return qubits_ == 1 ? op : (q == 0 ? kron(op, kI2) : kron(kI2, op)); };
  json controls = json::array(), jumps = json::array();
  const char* names[] = {"x", "y"};
  for (int q = 0; q < qubits_; ++q)
    for (int k = 0; k < 2; ++k) {
      controls.push_back(matrix_json(scale(on(k == 0 ? kX : kY, q), 0.5)));
      control_names_.push_back(std::string(names[k]) + (qubits_ == 1 ? "" : std::to_string(q)));
    }
  if (qubits_ == 2) {
    controls.push_back(matrix_json(scale(kron(kX, kX), 0.5)));
    controls.push_back(matrix_json(scale(kron(kZ, kZ), 0.5)));
    control_names_.push_back("xx");
    control_names_.push_back("zz");
  }
  n_ctrl_ = static_cast<int>(controls.size());
  for (int q = 0; q < qubits_; ++q) {
    jumps.push_back(matrix_json(on(kLower, q)));                           // relaxation: rate gamma_relax
    jumps.push_back(matrix_json(scale(on(kZ, q), std::sqrt(0.5))));        // dephasing: sqrt(gamma_deph / 2) Z
  }
  const Mat target = qubits_ == 1 ? kX : Mat{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, -1};
  json base = {{"kind", "lindblad"},
               {"dim", dim()},
               {"controls", controls},
               {"jumps", jumps},
               {"segment_duration", seg_dt_},
               {"n_segments", n_seg_},
               {"solver", cfg.solver},
               {"precision", cfg.precision},
               {"threads", cfg.threads}};
  if (cfg.dt > 0) base["dt"] = cfg.dt;
  if (cfg.fidelity == "average_gate") {
    json m = base;
    m["gate"] = true;
    m["target"] = {{"unitary", matrix_json(target)}};
    models_.push_back(m);
  } else {
    for (const auto& label : cfg.input_states) {
      const auto psi = product_state(label);
      json m = base;
      m["psi0"] = vector_json(psi);
      m["target"] = {{"state", vector_json(apply(target, psi))}};
      models_.push_back(m);
    }
  }
  // device = cuda: the programs get a GPU copy and every call runs there (the tensors stay
  // on the CPU and are staged); models_ stay device-free (eval_problems reproduce them anywhere).
  for (auto m : models_) {
    if (cfg.device == "cuda") m["device"] = "cuda";
    programs_.push_back(c10::make_intrusive<nn::OpenSystemProgram>(m.dump()));
  }
}

std::string Problem::fidelity_definition() const {
  if (programs_.size() == 1 && models_[0].contains("gate"))
    return "average gate fidelity of the simulated channel E against the target unitary V: "
           "F = (d F_pro + 1) / (d + 1), F_pro = Re tr(S_V^dag S_E) / d^2, S the superoperators (d = " +
           std::to_string(dim()) + ")";
  return "state-transfer fidelity: the mean over " + std::to_string(programs_.size()) +
         " input states psi of <V psi| rho_psi(T) |V psi>, rho_psi(T) the simulated final density matrix";
}

Tensor Problem::jump_rates(const Tensor& noise) const {
  // per qubit: (relaxation, dephasing), the order of the jump operators above
  const Tensor pair = torch::stack({noise.select(1, 1), noise.select(1, 0)}, 1);
  return qubits_ == 1 ? pair : torch::cat({pair, pair}, 1);
}

Tensor Problem::fidelity(const Tensor& amplitudes, const Tensor& noise) const {
  const Tensor rates = jump_rates(noise);
  Tensor f;
  for (const auto& p : programs_) {
    const Tensor fp = nn::open_fidelity(p, amplitudes, Tensor(), rates);
    f = f.defined() ? f + fp : fp;
  }
  return programs_.size() == 1 ? f : f / double(programs_.size());
}

std::vector<json> Problem::eval_problems(const Tensor& amplitudes, const Tensor& noise) const {
  std::vector<json> out;
  for (auto m : models_) {
    m.erase("n_segments");
    m["amplitudes"] = tensor_json(amplitudes);
    m["rates"] = tensor_json(jump_rates(noise));
    out.push_back(m);
  }
  return out;
}

// ---- policy -------------------------------------------------------------------------

Policy::Policy(int64_t in, int64_t width, int64_t layers, int64_t out, double scale) : scale_(scale) {
  dims_.push_back(in);
  for (int64_t l = 0; l < layers; ++l) dims_.push_back(width);
  dims_.push_back(out);
  for (std::size_t l = 0; l + 1 < dims_.size(); ++l) size_ += dims_[l] * dims_[l + 1] + dims_[l + 1];
}

Tensor Policy::init(at::Generator& gen, torch::ScalarType dtype) const {
  Tensor u = torch::rand({size_}, gen, torch::TensorOptions().dtype(dtype));
  Tensor p = u * 2 - 1;
  int64_t off = 0;
  for (std::size_t l = 0; l + 1 < dims_.size(); ++l) {
    const int64_t n = dims_[l] * dims_[l + 1] + dims_[l + 1];
    p.slice(0, off, off + n).mul_(1.0 / std::sqrt(double(dims_[l])));
    off += n;
  }
  return p;
}

std::vector<Tensor> Policy::split(const Tensor& params) const {
  const int64_t dim = params.dim() - 1;
  std::vector<Tensor> out;
  int64_t off = 0;
  for (std::size_t l = 0; l + 1 < dims_.size(); ++l) {
    const int64_t in = dims_[l], n = dims_[l + 1];
    out.push_back(params.slice(dim, off, off + in * n));
    out.push_back(params.slice(dim, off + in * n, off + in * n + n));
    off += in * n + n;
  }
  return out;
}

Tensor Policy::forward(const Tensor& params, const Tensor& features) const { return forward(split(params), features); }

Tensor Policy::forward(const std::vector<Tensor>& layers, const Tensor& features) const {
  const int64_t T = features.size(0);
  Tensor h = features;
  for (std::size_t l = 0; l + 1 < dims_.size(); ++l) {
    const int64_t in = dims_[l], out = dims_[l + 1];
    const Tensor& W = layers[2 * l];
    const Tensor& b = layers[2 * l + 1];
    if (W.dim() == 2) {  // per task: [T, in * out]
      h = torch::baddbmm(b.unsqueeze(1), h.unsqueeze(1), W.view({T, in, out})).squeeze(1);
    } else {
      h = torch::addmm(b, h, W.view({in, out}));
    }
    if (l + 2 < dims_.size()) h = torch::tanh(h);
  }
  return h * scale_;
}

void adam_step(torch::optim::Adam& opt, const Tensor& param, const Tensor& grad) {
  param.mutable_grad() = grad;
  opt.step();
}

namespace {

// Adam on per-task pulses (elementwise, so the tasks are optimised independently),
// with a cosine learning-rate decay to 1% and the best pulse per task kept.
std::pair<Tensor, Tensor> grape(const Problem& problem, Tensor u, const Tensor& noise, int64_t iterations,
                                double lr) {
  torch::optim::Adam opt({u}, torch::optim::AdamOptions(lr));
  Tensor best_f, best_u = u.clone();
  {
    torch::NoGradGuard ng;
    best_f = problem.fidelity(u, noise);
  }
  for (int64_t i = 0; i < iterations; ++i) {
    static_cast<torch::optim::AdamOptions&>(opt.param_groups()[0].options())
        .lr(lr * (0.01 + 0.99 * 0.5 * (1 + std::cos(std::numbers::pi * double(i) / double(iterations)))));
    const Tensor p = u.detach().requires_grad_(true);
    const Tensor f = problem.fidelity(p, noise);
    const Tensor g = torch::autograd::grad({(1 - f).sum()}, {p})[0];
    {
      torch::NoGradGuard ng;
      const Tensor better = f.detach() > best_f;
      best_f = torch::where(better, f.detach(), best_f);
      best_u = torch::where(better.view({-1, 1, 1}), u, best_u);
    }
    adam_step(opt, u, g);
  }
  torch::NoGradGuard ng;
  const Tensor f = problem.fidelity(u, noise);
  const Tensor better = f > best_f;
  return {torch::where(better, f, best_f), torch::where(better.view({-1, 1, 1}), u, best_u)};
}

std::string csv_pulses(const Problem& pr, const std::vector<std::pair<std::string, Tensor>>& sets,
                       const Tensor& noise) {
  std::ostringstream o;
  o.precision(17);
  o << "task,kind,gamma_deph,gamma_relax,segment,t_start";
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
          o << "all," << kind << ",,," << s;
        } else {
          o << b << ',' << kind << ',' << nz[b][0].item<double>() << ',' << nz[b][1].item<double>() << ',' << s;
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
  return Policy(2, cfg.hidden_width, cfg.hidden_layers, int64_t(pr.n_segments()) * pr.n_controls(), 1.0).size();
}

namespace {

// device = auto: with a CUDA device visible, a few meta-gradient steps on each device
// (qfleet::train::choose_device) pick the faster; the report says why with both figures.
// Several processes follow rank 0's choice.
std::pair<std::string, std::string> resolve_device(const Config& cfg, qfleet::train::ProcessGroup* group) {
  if (cfg.device != "auto") return {cfg.device, "requested"};
  if (qfleet::cuda_device_count() == 0) return {"cpu", "auto: cpu, the only device here (no CUDA device visible)"};
  const int64_t P = policy_size(cfg);
  auto make_step = [&](const torch::Device& d) -> std::function<Tensor()> {
    Config c = cfg;
    c.device = d.is_cuda() ? "cuda" : "cpu";
    auto step = std::make_shared<MetaStep>(c);
    const auto opts = torch::TensorOptions().dtype(c.precision == "complex64" ? torch::kFloat32 : torch::kFloat64);
    const Tensor theta = (torch::rand({P}, opts) - 0.5) * 0.2;
    const Tensor u = torch::rand({cfg.meta_batch, 2}, opts);
    const Tensor noise = torch::stack({cfg.deph_lo + (cfg.deph_hi - cfg.deph_lo) * u.select(1, 0),
                                       cfg.relax_lo + (cfg.relax_hi - cfg.relax_lo) * u.select(1, 1)}, 1);
    return [step, theta, noise] { return step->gradient(theta, noise); };
  };
  const auto choice = qfleet::train::choose_device(make_step, {torch::kCPU, torch::Device(torch::kCUDA, 0)}, 1, 3);
  Tensor cuda_chosen = torch::full({1}, choice.device.is_cuda() ? 1.0 : 0.0, torch::kFloat64);
  if (group != nullptr && group->size() > 1) cuda_chosen = group->all_gather(cuda_chosen).narrow(0, 0, 1);
  const bool cuda = cuda_chosen.item<double>() > 0.5;
  return {cuda ? "cuda" : "cpu", "auto: " + choice.reason + (cuda == choice.device.is_cuda() ? "" : "; rank 0 chose the other")};
}

}  // namespace

RunResult run(const Config& requested, const RunOptions& options) {
  const auto t_start = Clock::now();
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
  Config cfg = requested;  // the device resolved; cfg.json keeps what was asked
  std::string device_why;
  std::tie(cfg.device, device_why) = resolve_device(requested, group.get());
  Trainer tr(cfg);
  tr.set_group(group.get());
  const fs::path out(cfg.output_dir);
  fs::create_directories(out);
  const std::string ck_path = (out / "checkpoint.json").string(), log_path = (out / "train_log.jsonl").string();

  std::vector<CurvePoint> curve;
  double train_s = 0;
  int64_t it = 0;
  if (options.resume) {
    if (!fs::exists(ck_path)) throw ConfigError("resume: no checkpoint at " + ck_path);
    json ck;
    try {
      ck = json::parse(std::ifstream(ck_path));
    } catch (const json::exception& e) {
      throw ConfigError("resume: cannot read " + ck_path + ": " + e.what());
    }
    it = tr.restore(ck, curve, train_s);
  } else if (lead) {
    fs::remove(log_path);  // the meter appends: a fresh run starts a fresh log
  }
  auto record = [&](int64_t i, double train_f) {
    const auto v = tr.validate();
    curve.push_back({i, train_f, mean_of(v.before), mean_of(v.after)});
  };
  if (lead && it == 0 && curve.empty()) record(0, std::nan(""));

  // The loop is a step given to qfleet::train's runner: the training fidelity stays on
  // the device and the meter copies it to the host once per validate_every iterations
  // (train_log.jsonl); validations are the only other host transfers.
  const int64_t stop = options.stop_after >= 0 ? std::min(options.stop_after, cfg.iterations) : cfg.iterations;
  const auto t_train = Clock::now();
  const double train_s0 = train_s;
  auto write_checkpoint = [&](int64_t done) {
    train_s = train_s0 + seconds_since(t_train);
    if (lead) write_file_atomic(ck_path, tr.checkpoint(done, curve, train_s).dump());
  };
  qfleet::train::RunnerOptions ro;
  ro.steps = stop;
  ro.sync_every = cfg.validate_every;
  ro.log_path = lead ? log_path : "";
  ro.checkpoint_every = cfg.checkpoint_every;
  qfleet::train::StepRunner runner(ro);
  const int64_t first = it;
  runner.run(
      [&](int64_t i) {
        const Tensor train_f = tr.iteration();
        const int64_t done = i + 1;
        if (lead && (done % cfg.validate_every == 0 || done == cfg.iterations)) record(done, train_f.item<double>());
        if (lead && options.progress) options.progress->update(done, cfg.iterations, curve.back().val_after);
        return qfleet::train::Metrics{{"train_fidelity"}, {train_f}};
      },
      first, write_checkpoint);
  it = std::max(it, stop);
  if (lead && options.progress) options.progress->finish();
  if (first == stop) write_checkpoint(it);
  train_s = train_s0 + seconds_since(t_train);
  RunResult result;
  result.complete = it == cfg.iterations;
  if (!lead) {  // the other ranks are done: rank 0 runs the baselines and reports
    if (group) group->barrier();
    result.report = {{"rank", group->rank()}, {"processes", processes}};
    return result;
  }
  if (group) group->barrier();
  if (!result.complete) {
    result.report = {{"stopped_at_iteration", it}, {"checkpoint", ck_path}};
    return result;
  }
  const int64_t steps_run = stop - first;
  const json training_run = {{"processes", processes},
                             {"iterations_this_run", steps_run},
                             {"host_syncs_of_the_meter", runner.meter().host_syncs()},
                             {"log", "train_log.jsonl"}};

  // ---- validation and baselines
  const Problem& pr = tr.problem();
  const Tensor& vn = tr.val_noise();
  const int64_t V = vn.size(0);
  auto t0 = Clock::now();
  const auto val = tr.validate();
  const Tensor feats = tr.features(vn);
  const Tensor meta_before = tr.pulses(tr.theta().expand({V, tr.theta().size(0)}), feats).detach();
  const Tensor meta_adapted = tr.pulses(val.adapted, feats).detach();
  const double val_s = seconds_since(t0);

  t0 = Clock::now();
  auto rgen = at::make_generator<at::CPUGeneratorImpl>(cfg.seed + 3);
  Tensor robust = (torch::rand({pr.n_segments(), pr.n_controls()}, rgen, torch::TensorOptions().dtype(pr.dtype())) *
                       2 - 1) * 2.0;
  {
    torch::optim::Adam opt({robust}, torch::optim::AdamOptions(cfg.robust_lr));
    for (int64_t i = 0; i < cfg.robust_iterations; ++i) {
      const Tensor noise = tr.sample(rgen, cfg.meta_batch);
      const Tensor p = robust.detach().requires_grad_(true);
      const Tensor f = pr.fidelity(p, noise);
      const Tensor g = torch::autograd::grad({(1 - f).mean()}, {p})[0];
      adam_step(opt, robust, g);
    }
  }
  Tensor f_robust;
  {
    torch::NoGradGuard ng;
    f_robust = pr.fidelity(robust, vn);
  }
  const double robust_s = seconds_since(t0);

  // GRAPE from two starts per task (the robust pulse and the meta-adapted pulse), one batch.
  t0 = Clock::now();
  const Tensor starts = torch::cat({robust.unsqueeze(0).expand({V, -1, -1}), meta_adapted}, 0).contiguous();
  auto [gf, gu] = grape(pr, starts, torch::cat({vn, vn}, 0), cfg.grape_iterations, cfg.grape_lr);
  const Tensor from_meta = gf.slice(0, V, 2 * V) > gf.slice(0, 0, V);
  const Tensor f_grape = torch::where(from_meta, gf.slice(0, V, 2 * V), gf.slice(0, 0, V));
  const Tensor u_grape = torch::where(from_meta.view({-1, 1, 1}), gu.slice(0, V, 2 * V), gu.slice(0, 0, V));
  const double grape_s = seconds_since(t0);

  // ---- outputs
  json tasks = json::array();
  const Tensor vn64 = vn.to(torch::kFloat64);
  for (int64_t b = 0; b < V; ++b) {
    const double fa = val.after[b].item<double>(), fg = f_grape[b].item<double>();
    tasks.push_back({{"gamma_deph", vn64[b][0].item<double>()},
                     {"gamma_relax", vn64[b][1].item<double>()},
                     {"fidelity_before", val.before[b].item<double>()},
                     {"fidelity_after", fa},
                     {"fidelity_robust", f_robust[b].item<double>()},
                     {"fidelity_grape", fg},
                     {"grape_best_start", from_meta[b].item<bool>() ? "meta_adapted" : "robust"},
                     {"gap", fg - fa}});
  }
  const Tensor gap = f_grape.to(torch::kFloat64) - val.after.to(torch::kFloat64);
  const double total_s = seconds_since(t_start);
  json report = {
      {"app", options.app},
      {"qfleet_version", QFLEET_VERSION_STRING},
      {"config", cfg.json},
      {"seed", cfg.seed},
      {"system", {{"name", cfg.system},
                  {"dim", pr.dim()},
                  {"n_segments", pr.n_segments()},
                  {"segment_duration", pr.segment_duration()},
                  {"controls", pr.control_names()}}},
      {"solver", {{"name", cfg.solver}, {"dt", cfg.dt}, {"precision", cfg.precision}}},
      {"fidelity_definition", pr.fidelity_definition()},
      {"algorithm", cfg.algorithm},
      {"device", {{"requested", requested.device}, {"used", cfg.device}, {"why", device_why}}},
      {"threads", {{"torch", torch::get_num_threads()}, {"engine", cfg.threads}}},
      {"policy_parameters", tr.policy().size()},
      {"training_run", training_run},
      {"timings_s", {{"training", train_s},
                     {"per_iteration_ms", cfg.iterations > 0 ? 1e3 * train_s / double(cfg.iterations) : 0.0},
                     {"validation", val_s},
                     {"robust_baseline", robust_s},
                     {"grape", grape_s},
                     {"total_this_run", total_s}}},
      {"curve", curve_json(curve)},
      {"validation", {{"tasks", tasks},
                      {"mean_before", mean_of(val.before)},
                      {"mean_after", mean_of(val.after)},
                      {"mean_robust", mean_of(f_robust)},
                      {"mean_grape", mean_of(f_grape)},
                      {"mean_gap", gap.mean().item<double>()},
                      {"max_gap", gap.max().item<double>()},
                      {"adapt_steps", cfg.adapt_steps}}}};
  write_file_atomic((out / "report.json").string(), report.dump(2) + "\n");

  const std::vector<std::pair<std::string, Tensor>> sets = {
      {"robust", robust}, {"meta_before", meta_before}, {"meta_adapted", meta_adapted}, {"grape", u_grape}};
  write_file_atomic((out / "pulses.csv").string(), csv_pulses(pr, sets, vn));
  json pj = {{"segment_duration", pr.segment_duration()},
             {"controls", pr.control_names()},
             {"robust", tensor_json(robust)},
             {"tasks", json::array()}};
  for (int64_t b = 0; b < V; ++b)
    pj["tasks"].push_back({{"gamma_deph", vn64[b][0].item<double>()},
                           {"gamma_relax", vn64[b][1].item<double>()},
                           {"meta_before", tensor_json(meta_before[b])},
                           {"meta_adapted", tensor_json(meta_adapted[b])},
                           {"grape", tensor_json(u_grape[b])}});
  write_file_atomic((out / "pulses.json").string(), pj.dump() + "\n");
  const auto probs = pr.eval_problems(meta_adapted, vn);
  for (std::size_t i = 0; i < probs.size(); ++i) {
    const std::string name = probs.size() == 1 ? "meta_adapted.json"
                                               : "meta_adapted_" + cfg.input_states[i] + ".json";
    write_file_atomic((out / "eval" / name).string(), probs[i].dump() + "\n");
  }
  result.report = report;
  return result;
}

}  // namespace qfleet::meta
