// The environments as tensors on one device (tensor_envs.hpp; docs/rl.md).
#include "tensor_envs.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include <limits>
#include <stdexcept>

#include "qfleet/train.hpp"
#include "vec_env.hpp"

namespace qfleet::rl {

namespace {

at::Generator new_generator(const torch::Device& device) {
  if (device.is_cpu()) return at::make_generator<at::CPUGeneratorImpl>(0);
  if (device.is_cuda()) return at::detail::getCUDAHooks().getNewGenerator(device.index() < 0 ? 0 : device.index());
  throw std::invalid_argument("device: the environments run on the CPU or a CUDA GPU, not " + device.str());
}

// The episodes' first state: the identity channel S = 1 (gate tasks) or vec(|psi><psi|).
std::vector<Cx> initial_state(const TaskSpec& t) {
  const int64_t d = t.dim, d2 = d * d;
  std::vector<Cx> s;
  if (t.gate) {
    s.assign(std::size_t(d2 * d2), Cx(0));
    for (int64_t k = 0; k < d2; ++k) s[std::size_t(k * d2 + k)] = 1;
    return s;
  }
  s.resize(std::size_t(d2));
  for (int64_t a = 0; a < d; ++a)
    for (int64_t b = 0; b < d; ++b) s[std::size_t(b * d + a)] = t.initial_state[std::size_t(a)] * std::conj(t.initial_state[std::size_t(b)]);
  return s;
}

torch::Tensor to_tensor(const std::vector<Cx>& v) {
  return torch::from_blob(const_cast<Cx*>(v.data()), {int64_t(v.size())}, torch::kComplexDouble).clone();
}

}  // namespace

TensorEnvs::TensorEnvs(const TaskSpec& task, const EnvConfig& cfg, const Observer& observer,
                       const std::vector<std::vector<double>>& library, torch::Device device)
    : task_(task),
      cfg_(cfg),
      kind_(observer.kind()),
      shots_(observer.shots()),
      n_(cfg.num_envs),
      d_(task.dim),
      len_(task.gate ? int64_t(task.dim) * task.dim * task.dim * task.dim : int64_t(task.dim) * task.dim),
      n_phys_(observer.n_physical()),
      closed_(task.jumps.empty()),
      discrete_(cfg.action == "discrete"),
      device_(device),
      real_(torch::TensorOptions().dtype(torch::kFloat64).device(device)),
      cx_(torch::TensorOptions().dtype(torch::kComplexDouble).device(device)),
      gen_(new_generator(device)) {
  // Memory: the state, the step's channel and its product, plus the features, per environment.
  const int64_t d2 = d_ * d_;
  const double bytes = double(n_) * (double(3 * len_ + d2 * d2) * sizeof(Cx) + double(n_phys_ + 8) * 8);
  const double free = double(train::free_memory(device));
  if (bytes > 0.5 * free)
    throw std::invalid_argument("num_envs: " + std::to_string(n_) + " environments need " + std::to_string(bytes / 1e9) +
                                " GB on " + device.str() + ", more than half its free memory (" +
                                std::to_string(free / 1e9) + " GB)");
  OpenCompileOptions o;
  o.num_threads = int(cfg.threads);
  o.device = device.is_cuda() ? Device::cuda : Device::cpu;
  program_ = c10::make_intrusive<nn::OpenSystemProgram>(step_system(task, true), o);

  std::vector<double> lib;
  for (const auto& row : library)
    for (double v : row) lib.push_back(task.max_amplitude * v);
  library_ = torch::tensor(lib, torch::kFloat64).reshape({int64_t(library.size()), -1}).to(device);

  // Features and fidelity are linear in the state (plus the fidelity's constant for
  // gates): their matrix from the observer's own code applied to e_k and i e_k.
  const auto cols = std::size_t(n_phys_ + 1);
  std::vector<Cx> z(std::size_t(len_), Cx(0));
  std::vector<double> x(cols), off(cols, 0.0), map(2 * std::size_t(len_) * cols);
  observer.exact_features(z.data(), off.data());
  off.back() = observer.fidelity(z.data());
  for (int64_t k = 0; k < len_; ++k)
    for (int part = 0; part < 2; ++part) {
      z[std::size_t(k)] = part == 0 ? Cx(1, 0) : Cx(0, 1);
      observer.exact_features(z.data(), x.data());
      x.back() = observer.fidelity(z.data());
      for (std::size_t c = 0; c < cols; ++c) map[(2 * std::size_t(k) + std::size_t(part)) * cols + c] = x[c] - off[c];
      z[std::size_t(k)] = 0;
    }
  map_ = torch::tensor(map, torch::kFloat64).reshape({2 * len_, int64_t(cols)}).to(device);
  offset_ = torch::tensor(off, torch::kFloat64).to(device);
  initial_ = to_tensor(initial_state(task)).to(device);

  std::vector<double> lo, span;
  for (const auto& [a, b] : task.ranges) {
    lo.push_back(a);
    span.push_back(b - a);
  }
  lo_ = torch::tensor(lo, torch::kFloat64).to(device);
  span_ = torch::tensor(span, torch::kFloat64).to(device);
  auto indices = [&](const std::vector<int>& v) {
    return torch::tensor(std::vector<int64_t>(v.begin(), v.end()), torch::kInt64).to(device);
  };
  rate_idx_ = indices(task.rate_param);
  drift_idx_ = indices(task.drift_param);

  params_ = torch::zeros({n_, int64_t(task.ranges.size())}, real_);
  if (!task.jumps.empty()) rates_ = torch::zeros({n_, int64_t(task.rate_param.size())}, real_);
  if (!task.drift_terms.empty()) drift_ = torch::zeros({n_, int64_t(task.drift_param.size())}, real_);
  state_ = torch::zeros({n_, len_}, cx_);
  fid_ = torch::zeros({n_}, real_);
  t_dev_ = torch::zeros({}, real_);
  bad_ = torch::zeros({}, real_.dtype(torch::kBool));
}

std::string TensorEnvs::execution() const {
  return "tensors on " + device_.str() + " (the step's channel by " + program_->program.execution(std::size_t(n_)) + ")";
}

torch::Tensor TensorEnvs::elapsed() const { return torch::full({n_}, t_, torch::TensorOptions().dtype(torch::kInt64).device(device_)); }

torch::Tensor TensorEnvs::draw_tasks() {
  return lo_ + span_ * torch::rand({n_, int64_t(task_.ranges.size())}, gen_, real_);
}

torch::Tensor TensorEnvs::start_episodes(const torch::Tensor& params) {
  params_.copy_(params);
  if (rates_.defined()) rates_.copy_(params_.index_select(1, rate_idx_));
  if (drift_.defined()) drift_.copy_(params_.index_select(1, drift_idx_));
  state_.copy_(initial_.unsqueeze(0).expand({n_, len_}));
  t_dev_.zero_();
  torch::Tensor lin = linear(state_);
  fid_.copy_(lin.select(1, n_phys_));
  return lin;
}

torch::Tensor TensorEnvs::linear(const torch::Tensor& state) const {
  return torch::addmm(offset_, torch::view_as_real(state).reshape({state.size(0), 2 * len_}), map_);
}

// Measurement records (observe.cpp's Observer::features, vectorised): each +-1 observable
// from `shots` outcomes; a ladder's populations by conditional binomials, its <X_k>, <Y_k>
// from outcomes +1, -1 with probabilities (P_k +- x)/2.
torch::Tensor TensorEnvs::sampled(torch::Tensor x) {
  const double shots = double(shots_);
  auto binomial = [&](const torch::Tensor& count, const torch::Tensor& p) {
    return torch::binomial(count, p.clamp(0.0, 1.0).contiguous(), gen_);
  };
  if (task_.qubits > 0) {
    const torch::Tensor b = binomial(torch::full_like(x, shots), (1 + x) / 2);
    return 2 * b / shots - 1;
  }
  const int64_t d = d_;
  const torch::Tensor p = x.narrow(1, 0, d).clone();
  torch::Tensor out = x.clone(), left = torch::full({x.size(0)}, shots, real_), mass = torch::ones({x.size(0)}, real_);
  for (int64_t k = 0; k < d; ++k) {
    const torch::Tensor pk = p.select(1, k);
    const torch::Tensor got = k + 1 == d ? left : binomial(left, pk / mass.clamp_min(1e-300));
    out.select(1, k).copy_(got / shots);
    left = left - got;
    mass = mass - pk;
  }
  for (int64_t k = 0; k + 1 < d; ++k) {
    const torch::Tensor pk = (p.select(1, k) + p.select(1, k + 1)).clamp(0.0, 1.0);
    for (int64_t c = 0; c < 2; ++c) {
      const torch::Tensor v = x.select(1, d + 2 * k + c);
      const torch::Tensor plus = ((pk + v) / 2).clamp(0.0, 1.0);
      const torch::Tensor minus = torch::minimum(((pk - v) / 2).clamp_min(0.0), 1 - plus);
      const torch::Tensor np = binomial(torch::full_like(v, shots), plus);
      const torch::Tensor rest = 1 - plus;
      const torch::Tensor q = torch::where(rest > 0, minus / rest.clamp_min(1e-300), torch::zeros_like(rest));
      const torch::Tensor nm = binomial(shots - np, q);
      out.select(1, d + 2 * k + c).copy_((np - nm) / shots);
    }
  }
  return out;
}

torch::Tensor TensorEnvs::observe(const torch::Tensor& lin) {
  torch::Tensor x = lin.narrow(1, 0, n_phys_);
  if (kind_ == ObsKind::measurements) x = sampled(x.contiguous());
  // The time from the device's count, rounded to float32 as the host's t / n_steps would be.
  const torch::Tensor time = (t_dev_ / double(task_.n_steps)).to(torch::kFloat32).reshape({1, 1}).expand({n_, 1});
  std::vector<torch::Tensor> parts{x.to(torch::kFloat32), time};
  if (cfg_.observe_noise) {
    const torch::Tensor scaled = torch::where(span_ > 0, 2 * (params_ - lo_) / span_ - 1, torch::zeros_like(params_));
    parts.push_back(scaled.to(torch::kFloat32));
  }
  return torch::cat(parts, 1);
}

torch::Tensor TensorEnvs::reset(std::optional<uint64_t> seed, const torch::Tensor& tasks) {
  if (!tasks.defined()) {
    fixed_ = torch::Tensor();
  } else if (fixed_.defined()) {
    fixed_.copy_(tasks.detach());  // in place, as the state (a captured step may read it)
  } else {
    fixed_ = tasks.detach().to(device_, torch::kFloat64).contiguous();
  }
  if (seed) gen_.set_current_seed(*seed);
  t_ = 0;
  return observe(start_episodes(fixed_.defined() ? fixed_ : draw_tasks()));
}

torch::Tensor TensorEnvs::invalid(const torch::Tensor& actions) const {
  if (discrete_) return ((actions < 0) | (actions >= library_.size(0))).any();
  torch::Tensor bad = torch::isfinite(actions).logical_not().any();
  if (!cfg_.clip_actions) bad = bad | (actions.abs() > 1).any();
  return bad;
}

bool TensorEnvs::actions_valid(const torch::Tensor& actions) const {
  return !invalid(actions).item<bool>();  // the one value read back per step
}

bool TensorEnvs::take_bad_actions() {
  const bool bad = bad_.item<bool>();
  bad_.zero_();
  return bad;
}

torch::Tensor TensorEnvs::amplitudes(const torch::Tensor& actions) const {
  const torch::Tensor a = actions.detach().to(device_);
  if (discrete_) return library_.index_select(0, a.to(torch::kInt64));
  return a.to(torch::kFloat64).clamp(-1.0, 1.0) * task_.max_amplitude;
}

StepResult TensorEnvs::step(const torch::Tensor& actions) {
  const bool last = t_ + 1 >= task_.n_steps;
  StepResult r = apply(actions, last);
  count(last);
  return r;
}

StepResult TensorEnvs::advance(const torch::Tensor& actions, bool last) {
  pinned_ = true;  // the state in place from now on (a graph may hold its address)
  bad_.logical_or_(invalid(actions));
  // What the mark's reader refuses still steps: NaN as 0, infinities as +-1, indices clamped.
  return apply(discrete_ ? actions.clamp(0, library_.size(0) - 1) : torch::nan_to_num(actions, 0.0, 1.0, -1.0), last);
}

StepResult TensorEnvs::apply(const torch::Tensor& actions, bool last) {
  const int64_t d2 = d_ * d_, nc = int64_t(task_.controls.size());
  const torch::Tensor amps = amplitudes(actions).reshape({n_, 1, nc});
  const torch::Tensor out = nn::open_final_state(program_, amps, drift_, rates_);
  // The step's superoperator: the engine's (open), or conj(U) kron U from its unitary (closed).
  const torch::Tensor m = closed_ ? torch::einsum("npq,nab->npaqb", {out.conj().resolve_conj(), out}).reshape({n_, d2, d2})
                                  : out.view({n_, d2, d2});
  const int64_t cols = task_.gate ? d2 : 1;
  const torch::Tensor next = torch::bmm(m, state_.view({n_, d2, cols})).view({n_, len_});
  const torch::Tensor lin = linear(next);
  const torch::Tensor f = lin.select(1, n_phys_).contiguous();
  t_dev_.add_(1);

  StepResult r;
  r.reward = (cfg_.reward == "step" ? f - fid_ : (last ? f : torch::zeros_like(f))).to(torch::kFloat32);
  r.fidelity = f;
  r.terminated = torch::full({n_}, last, real_.dtype(torch::kBool));
  r.truncated = torch::zeros({n_}, real_.dtype(torch::kBool));
  if (pinned_) {
    state_.copy_(next);
  } else {
    state_ = next;  // (a copy costs stepping on the CPU a third of its speed: bench-env, 2026-11-30)
  }
  fid_.copy_(f);
  if (!last) {
    r.obs = observe(lin);
    r.final_obs = torch::zeros_like(r.obs);
    r.final_fidelity = torch::full({n_}, std::numeric_limits<double>::quiet_NaN(), real_);
    return r;
  }
  r.final_obs = observe(lin);
  r.final_fidelity = f;
  r.obs = observe(start_episodes(fixed_.defined() ? fixed_ : draw_tasks()));
  return r;
}

}  // namespace qfleet::rl
