// The vector of quantum-control environments (vec_env.hpp; docs/rl.md).
#include "vec_env.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "env_config.hpp"
#include "qfleet/parallel.hpp"
#include "qfleet/train.hpp"

namespace qfleet::rl {

namespace {

ObsKind obs_kind(const std::string& s) {
  if (s == "density") return ObsKind::density;
  if (s == "measurements") return ObsKind::measurements;
  return ObsKind::expectations;
}

OpenProgram step_program(const TaskSpec& t, int threads) {
  OpenCompileOptions o;
  o.num_threads = threads;
  return compile(step_system(t), o);
}

std::vector<std::vector<double>> default_library(int n_ctrl) {
  std::vector<std::vector<double>> lib{std::vector<double>(std::size_t(n_ctrl), 0.0)};
  for (int k = 0; k < n_ctrl; ++k)
    for (double level : {1.0, -1.0, 0.5, -0.5}) {
      std::vector<double> row(std::size_t(n_ctrl), 0.0);
      row[std::size_t(k)] = level;
      lib.push_back(row);
    }
  return lib;
}

}  // namespace

VecEnv::VecEnv(const EnvConfig& config)
    : cfg_(config),
      task_(make_task(config)),
      observer_(task_, obs_kind(config.observation), config.shots),
      program_(step_program(task_, int(config.threads))),
      device_(train::device_from_setting(config.device)),
      n_(config.num_envs),
      d_(task_.dim),
      threads_(config.threads > 0 ? config.threads : omp_get_max_threads()),
      discrete_(config.action == "discrete"),
      closed_(task_.jumps.empty()) {
  if (n_ < 1) throw std::invalid_argument("num_envs: expected >= 1");
  const int64_t n_ctrl = n_controls();
  library_ = config.pulse_library.empty() ? default_library(int(n_ctrl)) : config.pulse_library;
  for (const auto& row : library_)
    if (int64_t(row.size()) != n_ctrl)
      throw std::invalid_argument("pulse_library: every row needs " + std::to_string(n_ctrl) + " values (one per control: " +
                                  std::to_string(n_ctrl) + " controls)");
  obs_dim_ = observer_.n_physical() + 1 + (cfg_.observe_noise ? n_params() : 0);
  const bool on_cpu = device_.is_cpu();
  if (cfg_.stepping == "loop" && !on_cpu)
    throw std::invalid_argument("stepping: the host loop runs on the CPU; device = " + config.device +
                                " needs stepping = tensors (or automatic)");
  if (cfg_.stepping == "tensors" || (cfg_.stepping == "automatic" && !on_cpu)) {
    tensors_ = std::make_unique<TensorEnvs>(task_, cfg_, observer_, library_, device_);
    reset(cfg_.seed);
    return;
  }
  const int64_t per_state = task_.gate ? d_ * d_ * d_ * d_ : d_ * d_;
  // Memory: state, step output and scratch per env, checked before allocating.
  const double bytes = double(n_) * double(3 * per_state) * sizeof(Cx);
  if (bytes > 0.5 * double(train::free_memory(torch::kCPU)))
    throw std::invalid_argument("num_envs: " + std::to_string(n_) + " environments need " + std::to_string(bytes / 1e9) +
                                " GB of state, more than half the free memory");
  rng_.resize(std::size_t(n_));
  params_.assign(std::size_t(n_ * n_params()), 0.0);
  rates_.assign(std::size_t(n_) * task_.jumps.size(), 0.0);
  drift_.assign(std::size_t(n_) * task_.drift_terms.size(), 0.0);
  state_.assign(std::size_t(n_ * per_state), 0.0);
  step_out_.assign(std::size_t(n_) * program_.final_state_size(), 0.0);
  t_.assign(std::size_t(n_), 0);
  fid_.assign(std::size_t(n_), 0.0);
  reset(cfg_.seed);
}

std::string VecEnv::describe() const {
  return task_.name + ": " + std::to_string(n_) + " environments, d = " + std::to_string(d_) + ", " +
         std::to_string(task_.n_steps) + " steps of " + std::to_string(segment_duration()) + ", " +
         (closed_ ? "closed" : "open") + " system; " +
         (tensors_ ? "stepped as " + tensors_->execution() : "engine: " + program_.execution(std::size_t(n_)));
}

void VecEnv::draw_task(int64_t i) {
  const int64_t p = n_params();
  double* row = params_.data() + i * p;
  if (!fixed_tasks_.empty()) {
    for (int64_t k = 0; k < p; ++k) row[k] = fixed_tasks_[std::size_t(i * p + k)];
  } else {
    for (int64_t k = 0; k < p; ++k) {
      const auto [lo, hi] = task_.ranges[std::size_t(k)];
      std::uniform_real_distribution<double> u(lo, hi);
      row[k] = lo == hi ? lo : u(rng_[std::size_t(i)]);
    }
  }
  const std::size_t nj = task_.jumps.size(), nd = task_.drift_terms.size();
  for (std::size_t j = 0; j < nj; ++j) rates_[std::size_t(i) * nj + j] = row[task_.rate_param[j]];
  for (std::size_t m = 0; m < nd; ++m) drift_[std::size_t(i) * nd + m] = row[task_.drift_param[m]];
}

void VecEnv::start_episode(int64_t i) {
  draw_task(i);
  const int64_t d = d_, d2 = d * d;
  Cx* s = state_.data() + (task_.gate ? i * d2 * d2 : i * d2);
  if (task_.gate) {
    std::fill(s, s + d2 * d2, Cx(0));
    for (int64_t k = 0; k < d2; ++k) s[k * d2 + k] = 1;
  } else {
    const auto& psi = task_.initial_state;
    for (int64_t a = 0; a < d; ++a)
      for (int64_t b = 0; b < d; ++b) s[b * d + a] = psi[std::size_t(a)] * std::conj(psi[std::size_t(b)]);
  }
  t_[std::size_t(i)] = 0;
  fid_[std::size_t(i)] = observer_.fidelity(s);
}

void VecEnv::observe(int64_t i, float* out) {
  const int64_t d2 = d_ * d_;
  const Cx* s = state_.data() + (task_.gate ? i * d2 * d2 : i * d2);
  observer_.features(s, out, rng_[std::size_t(i)]);
  int64_t o = observer_.n_physical();
  out[o++] = float(double(t_[std::size_t(i)]) / double(task_.n_steps));
  if (cfg_.observe_noise) {
    for (int64_t k = 0; k < n_params(); ++k) {
      const auto [lo, hi] = task_.ranges[std::size_t(k)];
      const double v = params_[std::size_t(i * n_params() + k)];
      out[o++] = hi > lo ? float(2 * (v - lo) / (hi - lo) - 1) : 0.0f;
    }
  }
}

torch::Tensor VecEnv::reset(std::optional<uint64_t> seed, const torch::Tensor& tasks) {
  std::vector<double> fixed;
  if (tasks.defined()) {
    if (tasks.dim() != 2 || tasks.size(0) != n_ || tasks.size(1) != n_params() || !tasks.is_floating_point())
      throw std::invalid_argument("reset: tasks must be a float tensor [num_envs, n_params] = [" + std::to_string(n_) +
                                  ", " + std::to_string(n_params()) + "], got " + std::string(tasks.sizes().vec().empty() ? "a scalar" : c10::str(tasks.sizes())));
    const torch::Tensor c = tasks.detach().to(torch::kCPU, torch::kFloat64).contiguous();
    fixed.assign(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
    for (std::size_t k = 0; k < fixed.size(); ++k) {
      if (!std::isfinite(fixed[k])) throw std::invalid_argument("reset: tasks has a non-finite value");
      const std::string& name = task_.param_names[k % std::size_t(n_params())];
      const bool is_rate = name.rfind("gamma", 0) == 0;
      if (is_rate && fixed[k] < 0) throw std::invalid_argument("reset: tasks has a negative rate");
      // The bounds the configuration's env.<name> range has (config.json): a rate of 1e200
      // is finite but overflows the simulation into NaN rewards some steps later.
      const nlohmann::json& key = schema().keys().at("env." + name);
      const double lo = key.at("min").get<double>(), hi = key.at("max").get<double>();
      if (fixed[k] < lo || fixed[k] > hi) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.6g", fixed[k]);
        throw std::invalid_argument("reset: tasks[" + std::to_string(k / std::size_t(n_params())) + "][" +
                                    std::to_string(k % std::size_t(n_params())) + "] (" + name + ") is " + buf +
                                    ", outside [" + key.at("min").dump() + ", " + key.at("max").dump() +
                                    "], the range env." + name + " allows");
      }
    }
  }
  if (tensors_) return tensors_->reset(seed, tasks.defined() ? tasks.detach().to(torch::kFloat64) : tasks);
  fixed_tasks_ = std::move(fixed);
  if (seed)
    for (int64_t i = 0; i < n_; ++i) rng_[std::size_t(i)].seed(*seed + uint64_t(i));
  torch::Tensor obs = torch::empty({n_, obs_dim_}, torch::kFloat32);
  float* o = obs.data_ptr<float>();
  qfleet::parallel_for(n_, int(threads_), envs_per_chunk(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      start_episode(i);
      observe(i, o + i * obs_dim_);
    }
  });
  return device_.is_cpu() ? obs : obs.to(device_);
}

void VecEnv::check_shape(const torch::Tensor& actions) const {
  const int64_t n_ctrl = n_controls();
  if (!actions.defined()) throw std::invalid_argument("step: actions is undefined");
  if (discrete_) {
    if (actions.is_floating_point() || actions.is_complex() || actions.scalar_type() == torch::kBool)
      throw std::invalid_argument("step: discrete actions must be integers (indices into the pulse library)");
    if (actions.dim() != 1 || actions.size(0) != n_)
      throw std::invalid_argument("step: discrete actions must have shape [num_envs] = [" + std::to_string(n_) + "], got " +
                                  c10::str(actions.sizes()));
    return;
  }
  if (!actions.is_floating_point())
    throw std::invalid_argument("step: continuous actions must be floating point, got " + std::string(c10::toString(actions.scalar_type())));
  if (actions.dim() != 2 || actions.size(0) != n_ || actions.size(1) != n_ctrl)
    throw std::invalid_argument("step: continuous actions must have shape [num_envs, n_controls] = [" + std::to_string(n_) +
                                ", " + std::to_string(n_ctrl) + "], got " + c10::str(actions.sizes()));
}

std::vector<double> VecEnv::checked_amplitudes(const torch::Tensor& actions) const {
  check_shape(actions);
  const int64_t n_ctrl = n_controls();
  const double amp = task_.max_amplitude;
  std::vector<double> out(std::size_t(n_ * n_ctrl));
  if (discrete_) {
    const torch::Tensor a = actions.to(torch::kCPU, torch::kInt64).contiguous();
    const int64_t* p = a.data_ptr<int64_t>();
    for (int64_t i = 0; i < n_; ++i) {
      if (p[i] < 0 || p[i] >= n_actions())
        throw std::invalid_argument("step: discrete action " + std::to_string(p[i]) + " of environment " + std::to_string(i) +
                                    " is outside [0, " + std::to_string(n_actions()) + ")");
      const auto& row = library_[std::size_t(p[i])];
      for (int64_t k = 0; k < n_ctrl; ++k) out[std::size_t(i * n_ctrl + k)] = amp * row[std::size_t(k)];
    }
    return out;
  }
  const torch::Tensor a = actions.detach().to(torch::kCPU, torch::kFloat64).contiguous();
  const double* p = a.data_ptr<double>();
  for (int64_t k = 0; k < n_ * n_ctrl; ++k) {
    double v = p[k];
    if (!std::isfinite(v))
      throw std::invalid_argument("step: action of environment " + std::to_string(k / n_ctrl) + " is not finite (" +
                                  std::to_string(v) + ")");
    if (v < -1 || v > 1) {
      if (!cfg_.clip_actions)
        throw std::invalid_argument("step: action " + std::to_string(v) + " of environment " + std::to_string(k / n_ctrl) +
                                    " is outside [-1, 1] (clip_actions = false)");
      v = std::clamp(v, -1.0, 1.0);
    }
    out[std::size_t(k)] = amp * v;
  }
  return out;
}

// The tensor path checks on the device; a bad action is then found again on the host,
// whose checks name it (the same errors as the loop's).
void VecEnv::check_actions_as_tensors(const torch::Tensor& actions) const {
  check_shape(actions);
  if (!tensors_->actions_valid(actions)) checked_amplitudes(actions);
}

torch::Tensor VecEnv::amplitudes(const torch::Tensor& actions) const {
  if (tensors_) {
    check_actions_as_tensors(actions);
    return tensors_->amplitudes(actions);
  }
  const auto a = checked_amplitudes(actions);
  return torch::tensor(a, torch::kFloat64).reshape({n_, n_controls()});
}

StepResult VecEnv::step(const torch::Tensor& actions) {
  if (tensors_) {
    check_actions_as_tensors(actions);
    return tensors_->step(actions);
  }
  const std::vector<double> amps = checked_amplitudes(actions);  // every check before any change
  TaskArgs<double> args;
  args.batch = std::size_t(n_);
  args.amplitudes = amps;
  args.rates = rates_;
  args.drift_coeffs = drift_;
  TaskOutputs<double> outs;
  outs.final_state = step_out_;
  program_.forward(args, outs);

  StepResult r;
  r.obs = torch::empty({n_, obs_dim_}, torch::kFloat32);
  // (filled below, row by row: torch's zeros of [4096, 10] is a parallel region of LibTorch's
  // OpenMP team, whose spinning threads then took the cores from the step's own threads)
  r.final_obs = torch::empty({n_, obs_dim_}, torch::kFloat32);
  r.reward = torch::empty({n_}, torch::kFloat32);
  r.terminated = torch::empty({n_}, torch::kBool);
  r.truncated = torch::zeros({n_}, torch::kBool);
  r.final_fidelity = torch::empty({n_}, torch::kFloat64);
  r.fidelity = torch::empty({n_}, torch::kFloat64);
  float *obs = r.obs.data_ptr<float>(), *fobs = r.final_obs.data_ptr<float>(), *rew = r.reward.data_ptr<float>();
  bool* term = r.terminated.data_ptr<bool>();
  double *ffid = r.final_fidelity.data_ptr<double>(), *fid = r.fidelity.data_ptr<double>();
  const int64_t d = d_, d2 = d * d, per_out = int64_t(program_.final_state_size());
  const bool gate = task_.gate, step_reward = cfg_.reward == "step";
  // (the engine's pool, not an OpenMP team: on a busy machine a team's spinning threads cost
  // a small step tens of times its work; qfleet/parallel.hpp)
  qfleet::parallel_for(n_, int(threads_), envs_per_chunk(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      thread_local std::vector<Cx> sup, tmp;
      const Cx* out = step_out_.data() + i * per_out;
      const Cx* m = out;  // the step's superoperator [d^2, d^2]
      if (closed_) {      // unitary U: S = conj(U) kron U
        sup.resize(std::size_t(d2 * d2));
        for (int64_t p = 0; p < d; ++p)
          for (int64_t q = 0; q < d; ++q)
            for (int64_t a = 0; a < d; ++a)
              for (int64_t b = 0; b < d; ++b)
                sup[std::size_t((p * d + a) * d2 + q * d + b)] = std::conj(out[p * d + q]) * out[a * d + b];
        m = sup.data();
      }
      Cx* s = state_.data() + (gate ? i * d2 * d2 : i * d2);
      const int64_t cols = gate ? d2 : 1;
      tmp.assign(std::size_t(d2 * cols), Cx(0));
      for (int64_t a = 0; a < d2; ++a)
        for (int64_t k = 0; k < d2; ++k) {
          const Cx mak = m[a * d2 + k];
          const Cx* srow = s + k * cols;
          Cx* trow = tmp.data() + a * cols;
          for (int64_t c = 0; c < cols; ++c) trow[c] += mak * srow[c];
        }
      std::copy(tmp.begin(), tmp.end(), s);
      const double f = observer_.fidelity(s);
      const int64_t t = ++t_[std::size_t(i)];
      const bool done = t >= task_.n_steps;
      rew[i] = float(step_reward ? f - fid_[std::size_t(i)] : (done ? f : 0.0));
      fid_[std::size_t(i)] = f;
      fid[i] = f;
      term[i] = done;
      if (done) {
        observe(i, fobs + i * obs_dim_);
        ffid[i] = f;
        start_episode(i);
      } else {
        std::fill(fobs + i * obs_dim_, fobs + (i + 1) * obs_dim_, 0.0f);
        ffid[i] = std::numeric_limits<double>::quiet_NaN();
      }
      observe(i, obs + i * obs_dim_);
    }
  });
  if (!device_.is_cpu()) {
    r.obs = r.obs.to(device_);
    r.reward = r.reward.to(device_);
    r.terminated = r.terminated.to(device_);
    r.truncated = r.truncated.to(device_);
    r.final_obs = r.final_obs.to(device_);
  }
  return r;
}

int64_t VecEnv::envs_per_chunk() const {
  const int64_t d2 = d_ * d_, cols = task_.gate ? d2 : 1;
  // The superoperator's product with the state, building it from a unitary, and a
  // fidelity, an observation and an episode's start (a few hundred operations).
  const int64_t work = d2 * d2 * cols + (closed_ ? d2 * d2 : 0) + 256;
  return std::max<int64_t>(1, (int64_t(1) << 15) / work);
}

torch::Tensor VecEnv::tasks() const {
  if (tensors_) return tensors_->tasks();
  return torch::tensor(params_, torch::kFloat64).reshape({n_, n_params()});
}

torch::Tensor VecEnv::fidelity() const { return tensors_ ? tensors_->fidelity() : torch::tensor(fid_, torch::kFloat64); }

torch::Tensor VecEnv::elapsed() const { return tensors_ ? tensors_->elapsed() : torch::tensor(t_, torch::kInt64); }

}  // namespace qfleet::rl
