// The PPO training loop (ppo.hpp; docs/rl.md). Step for step CleanRL's
// ppo_continuous_action.py: rollout, GAE, minibatch epochs of the clipped objective.
#include "ppo.hpp"

#include <ATen/detail/CUDAHooksInterface.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>
#include <optional>
#include <tuple>

#include "common/lifecycle.hpp"
#include "common/report_header.hpp"
#include "evaluation.hpp"
#include "qfleet/tensor_file.hpp"
#include "qfleet/train.hpp"

namespace qfleet::rl {

using nlohmann::json;
using torch::Tensor;

namespace {

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

struct Phases {
  double simulate = 0, policy = 0, update = 0, evaluate = 0;
  json to_json() const { return {{"simulate", simulate}, {"policy", policy}, {"update", update}, {"evaluate", evaluate}}; }
};

// The runtime's device choice for a phase: `automatic` times each available device.
torch::Device pick(const std::string& setting, const std::function<std::function<Tensor()>(const torch::Device&)>& make,
                   std::string& why) {
  if (setting != "automatic") return train::device_from_setting(setting, &why);
  const auto devices = train::available_devices();
  if (devices.size() == 1) {
    why = "the CPU is the only device";
    return devices[0];
  }
  const train::DeviceChoice c = train::choose_device(make, devices, 2, 5);
  why = c.reason;
  return c.device;
}

// The policy, its buffers and the environments' observations are float32 whatever the
// caller's default dtype (Python's tests set float64): the default is float32 for the run.
struct Float32Default {
  caffe2::TypeMeta saved = torch::get_default_dtype();
  Float32Default() { torch::set_default_dtype(caffe2::TypeMeta::Make<float>()); }
  ~Float32Default() { torch::set_default_dtype(saved); }
  Float32Default(const Float32Default&) = delete;
  Float32Default& operator=(const Float32Default&) = delete;
};

// One PPO run as the lifecycle every app's run goes through (apps/common/lifecycle.hpp,
// on qfleet::train's StepRunner): set up (processes, environments, agent, devices,
// optimizer), resume, then one step per rollout (collect -> update -> record: the curve
// row, and the row's metrics for the runner's log and progress bar), checkpoints, and
// finish (final evaluation, the report and the files). The order of
// the random draws is the run's contract (a resumed run is bit-identical): the agent
// from the default generator seeded with seed, the devices' trial agents after it,
// then actions and minibatch orders from one generator seeded with seed + 7 (on a GPU
// rollout, the actions from that GPU's own generator seeded with seed + 7).
//
// The rollout is resident on its device: the environments step there (on a GPU as
// tensors, tensor_envs.hpp), and the policy's actions, the buffers and GAE stay there;
// the host reads the episode totals once per episode, when every environment ends
// together (fixed-length episodes, all reset at the rollout's start). With the
// environments stepped as tensors, a rollout step is one function of tensors held in
// place (rollout_step(): the buffers' row a device counter, the totals summed on the
// device and read once per rollout), which rollout_mode = graph captures in a CUDA graph:
// one graph for the steps inside an episode, one for its last step (which resets).
class PpoRun {
 public:
  PpoRun(const PpoConfig& cfg, const TrainOptions& opt);
  int64_t resume();
  train::RunnerOptions runner_options() const;
  train::Metrics step(int64_t it);
  void checkpoint(int64_t done);
  json finish(const app::Loop& loop);
  std::string settings() const {  // (named by an error while running: app::run_lifecycle)
    return "task = " + cfg_.env.task + ", num_envs = " + std::to_string(cfg_.env.num_envs) + ", rollout on " +
           roll_dev_.str() + ", update on " + upd_dev_.str();
  }

 private:

  struct Rollout {
    Tensor next_obs, next_done;
    double fidelity_sum = 0, return_sum = 0;
    int64_t episodes = 0;
  };
  struct Update {
    double pg = 0, v = 0, entropy = 0, kl_last = 0, clipfrac = 0;
    int64_t minibatches = 0;
  };
  Rollout collect(int64_t it);
  Rollout collect_tensors(int64_t it, const Tensor& first_obs);
  std::tuple<Tensor, Tensor, Tensor> policy_action(const Tensor& obs);
  train::Metrics rollout_step(bool last);
  std::string rollout_mode_status() const;
  Update update(const Rollout& r);
  json record(int64_t it, const Rollout& r, const Update& u);
  torch::Device pick_rollout_device();
  torch::Device pick_update_device();
  void sync_roller();
  void save(int64_t step, double wall);
  Update minibatch_epochs(const Tensor& b_obs, const Tensor& b_act, const Tensor& b_logp, const Tensor& b_adv,
                          const Tensor& b_ret, const Tensor& b_val);
  double wall() const { return wall_before_ + now_s() - t_start_; }
  std::string log_path() const { return (std::filesystem::path(cfg_.output_dir) / "train_log.jsonl").string(); }

  Float32Default float32_default_;
  PpoConfig cfg_;
  TrainOptions opt_;
  int rank_, world_;
  std::unique_ptr<train::ProcessGroup> group_;
  TaskSpec task_;
  int64_t n_total_ = 0, n_local_ = 0, first_env_ = 0, T_ = 0, batch_ = 0, iterations_ = 0, mb_ = 0;
  EnvConfig local_env_;  // this process's environments (device: set when the rollout's is chosen)
  std::unique_ptr<VecEnv> env_;
  bool discrete_ = false;
  int64_t n_out_ = 0, obs_dim_ = 0, act_w_ = 0;
  Agent agent_{nullptr}, roller_{nullptr};
  at::Generator gen_, roll_gen_;  // roll_gen_: the rollout's actions (gen_ itself on the CPU)
  std::string why_roll_, why_upd_;
  torch::Device roll_dev_{torch::kCPU}, upd_dev_{torch::kCPU};
  train::PrecisionPolicy prec_, roll_prec_;
  std::unique_ptr<torch::optim::Adam> optimizer_;
  Tensor val_tasks_;
  std::string ckpt_, curve_path_, records_;  // records_: curve.json's text as the checkpoint holds it
  train::TrainState state_;
  json curve_ = json::array();
  Phases ph_;
  app::RunClock run_clock_;
  double wall_before_ = 0, t_start_ = 0, last_val_ = std::numeric_limits<double>::quiet_NaN();
  int64_t first_ = 0, done_ = 0;  // rollouts: this call's first, done so far
  Tensor obs_b_, act_b_, logp_b_, rew_b_, done_b_, val_b_;
  // collect_tensors' state, in place: the next observation and done flags, the episodes'
  // returns, the buffers' row, and the rollout's totals of final fidelity and return.
  struct Roll {
    Tensor obs, done, ep_ret, row, fid_sum, ret_sum;
  } roll_;
  bool graph_steps_ = false;
  std::unique_ptr<train::CapturedStep> roll_steps_[2];  // inside an episode, its last step
};

PpoRun::PpoRun(const PpoConfig& cfg, const TrainOptions& opt)
    : cfg_(cfg), opt_(opt), rank_(opt.nproc_rank), world_(opt.nproc_world), task_(make_task(cfg.env)) {
  if (world_ > 1) {
    auto d = train::dist_from_env();
    if (!d) throw std::invalid_argument("nproc > 1 needs RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT (qfleet-rl --nproc sets them)");
    group_ = std::make_unique<train::ProcessGroup>(*d);
  }
  if (cfg_.env.num_envs % world_ != 0)
    throw std::invalid_argument("num_envs (" + std::to_string(cfg_.env.num_envs) + ") must be a multiple of the process count " +
                                std::to_string(world_));
  if (cfg_.threads > 0) torch::set_num_threads(int(cfg_.threads));
  n_total_ = cfg_.env.num_envs, n_local_ = n_total_ / world_, first_env_ = rank_ * n_local_;
  T_ = cfg_.rollout_steps > 0 ? cfg_.rollout_steps : task_.n_steps;
  batch_ = n_local_ * T_;
  if (batch_ % cfg_.num_minibatches != 0 || batch_ / cfg_.num_minibatches < 1)
    throw std::invalid_argument("num_minibatches (" + std::to_string(cfg_.num_minibatches) + ") must divide the rollout batch " +
                                std::to_string(batch_) + " (num_envs per process x rollout_steps)");
  iterations_ = std::max<int64_t>(1, cfg_.total_steps / (n_total_ * T_));
  mb_ = batch_ / cfg_.num_minibatches;

  local_env_ = cfg_.env;
  local_env_.num_envs = n_local_;
  local_env_.device = "cpu";
  local_env_.threads = cfg_.threads;
  {
    EnvConfig one = local_env_;  // the sizes, from one environment
    one.num_envs = 1;
    one.stepping = "loop";
    const VecEnv probe(one);
    discrete_ = probe.discrete();
    n_out_ = discrete_ ? probe.n_actions() : probe.n_controls();
    obs_dim_ = probe.obs_dim(), act_w_ = discrete_ ? 1 : n_out_;
  }

  torch::manual_seed(cfg_.seed);  // orthogonal init draws from the default generator
  agent_ = Agent(obs_dim_, n_out_, discrete_, cfg_.hidden, cfg_.init_log_std);
  gen_ = at::make_generator<at::CPUGeneratorImpl>(cfg_.seed + 7);  // actions, minibatch order

  // devices: the runtime times each phase on each device (auto) or takes the setting
  roll_dev_ = pick_rollout_device();
  upd_dev_ = pick_update_device();
  local_env_.device = roll_dev_.is_cuda() ? "cuda" : "cpu";
  env_ = std::make_unique<VecEnv>(local_env_);
  roll_gen_ = gen_;
  if (roll_dev_.is_cuda()) {
    roll_gen_ = at::detail::getCUDAHooks().getNewGenerator(roll_dev_.index());
    roll_gen_.set_current_seed(cfg_.seed + 7);
  }
  prec_ = train::precision_policy(upd_dev_), roll_prec_ = train::precision_policy(roll_dev_);
  train::apply_backend_switches(prec_);
  agent_->to(upd_dev_);
  roller_ = agent_;  // the same module unless the phases run on different devices
  if (roll_dev_ != upd_dev_) {
    roller_ = Agent(obs_dim_, n_out_, discrete_, cfg_.hidden, cfg_.init_log_std);
    roller_->to(roll_dev_);
  }
  sync_roller();
  optimizer_ = std::make_unique<torch::optim::Adam>(agent_->parameters(),
                                                    torch::optim::AdamOptions(cfg_.learning_rate).eps(1e-5));
  val_tasks_ = validation_tasks(cfg_.env, cfg_.validation_tasks, cfg_.seed);  // the meta-control app's for this seed

  namespace fs = std::filesystem;
  fs::create_directories(cfg_.output_dir);
  ckpt_ = (fs::path(cfg_.output_dir) / "checkpoint.pt").string();
  curve_path_ = (fs::path(cfg_.output_dir) / "curve.json").string();
  json cfg_json = cfg_.to_json();
  cfg_json.erase("output_dir");
  state_.config = cfg_json.dump();
  state_.modules = {{"agent", agent_.ptr().get()}};
  state_.optimizers = {{"adam", optimizer_.get()}};
  state_.generators = {{"policy", gen_}};
  if (roll_dev_.is_cuda()) state_.generators.emplace_back("rollout", roll_gen_);
  // The curve, phase times and wall time travel inside the checkpoint (curve.json is the copy
  // for readers), so a run killed between the two writes resumes with both at one rollout.
  state_.texts = {{"records", &records_}};
  const auto on = torch::TensorOptions().device(roll_dev_);
  obs_b_ = torch::zeros({T_, n_local_, obs_dim_}, on), act_b_ = torch::zeros({T_, n_local_, act_w_}, on);
  logp_b_ = torch::zeros({T_, n_local_}, on), rew_b_ = torch::zeros({T_, n_local_}, on);
  done_b_ = torch::zeros({T_, n_local_}, on), val_b_ = torch::zeros({T_, n_local_}, on);
}

// A rollout step on each device: the environments there and the policy's forward.
torch::Device PpoRun::pick_rollout_device() {
  return pick(cfg_.device, [&](const torch::Device& d) {
    auto a = std::make_shared<Agent>(obs_dim_, n_out_, discrete_, cfg_.hidden, cfg_.init_log_std);
    (*a)->to(d);
    EnvConfig ec = local_env_;
    ec.device = d.is_cuda() ? "cuda" : "cpu";
    auto env = std::make_shared<VecEnv>(ec);
    auto obs = std::make_shared<Tensor>(env->reset(ec.seed));
    return std::function<Tensor()>([a, env, obs] {
      torch::NoGradGuard ng;
      const StepResult r = env->step((*a)->deterministic(*obs));
      *obs = r.obs;
      return r.reward.sum();
    });
  }, why_roll_);
}

torch::Device PpoRun::pick_update_device() {
  return pick(cfg_.device, [&](const torch::Device& d) {
    auto a = std::make_shared<Agent>(obs_dim_, n_out_, discrete_, cfg_.hidden, cfg_.init_log_std);
    (*a)->to(d);
    auto opt2 = std::make_shared<torch::optim::Adam>((*a)->parameters(), torch::optim::AdamOptions(1e-4));
    auto x = torch::randn({mb_, obs_dim_}).to(d);
    return std::function<Tensor()>([a, x, opt2] {
      opt2->zero_grad();
      Tensor l = (*a)->value(x).pow(2).mean() + (*a)->deterministic(x).float_power(2).mean().to(torch::kFloat);
      l.backward();
      opt2->step();
      return l.detach();
    });
  }, why_upd_);
}

void PpoRun::sync_roller() {
  if (roll_dev_ == upd_dev_) return;
  torch::NoGradGuard ng;
  auto src = agent_->parameters(), dst = roller_->parameters();
  for (std::size_t i = 0; i < src.size(); ++i) dst[i].copy_(src[i]);
}

int64_t PpoRun::resume() {
  if (opt_.resume && std::filesystem::exists(ckpt_)) {
    train::load_checkpoint(ckpt_, state_);
    first_ = state_.step;
    const json saved = json::parse(records_, nullptr, false);
    if (!saved.is_object() || !saved.contains("curve"))
      throw train::CheckpointError(ckpt_ + ": its records are not the curve and timings it should hold");
    for (const auto& row : saved["curve"])
      if (row["rollout"].get<int64_t>() <= first_) curve_.push_back(row);
    ph_.simulate = saved["phases"]["simulate"];
    ph_.policy = saved["phases"]["policy"];
    ph_.update = saved["phases"]["update"];
    ph_.evaluate = saved["phases"]["evaluate"];
    wall_before_ = saved["wall_s"];
    sync_roller();
  }  // (the runner starts the log afresh, or trims it to the checkpoint: StepRunner::run)
  done_ = first_;
  t_start_ = now_s();
  return first_;
}

train::RunnerOptions PpoRun::runner_options() const {
  train::RunnerOptions ro;
  ro.steps = iterations_;
  ro.sync_every = 1;  // record() reads each rollout's figures on the host anyway
  ro.log_path = rank_ == 0 ? log_path() : "";
  ro.progress = opt_.progress && rank_ == 0;
  ro.checkpoint_every = cfg_.checkpoint_every;
  ro.stop_after = opt_.stop_after;
  return ro;
}

train::Metrics PpoRun::step(int64_t it) {
  const Rollout r = collect(it);
  const Update u = update(r);
  const json row = record(it, r, u);
  done_ = it + 1;
  train::Metrics m;
  for (const char* k : {"mean_final_fidelity", "mean_return", "pg_loss", "v_loss", "entropy", "approx_kl", "clipfrac"}) {
    m.names.emplace_back(k);
    m.values.push_back(torch::tensor(row[k].get<double>(), torch::kFloat64));
  }
  return m;
}

void PpoRun::checkpoint(int64_t done) {
  if (rank_ == 0) save(done, wall());
}

// The rollout policy's sampled action (float32 unless discrete), its log-probability
// and the value, without gradients, in BF16 where the runtime's rule says so.
std::tuple<Tensor, Tensor, Tensor> PpoRun::policy_action(const Tensor& obs) {
  torch::NoGradGuard ng;
  train::AutocastScope ac(roll_prec_);
  auto [a, lp, ent, v] = roller_->act(obs, Tensor(), &roll_gen_);
  return {discrete_ ? a : a.to(torch::kFloat), lp.to(torch::kFloat), v.to(torch::kFloat)};
}

PpoRun::Rollout PpoRun::collect(int64_t it) {
  if (cfg_.anneal_lr) {
    const double lr = (1.0 - double(it) / double(iterations_)) * cfg_.learning_rate;
    for (auto& g : optimizer_->param_groups()) static_cast<torch::optim::AdamOptions&>(g.options()).lr(lr);
  }
  // Each rollout starts fresh episodes from seed + it x num_envs (+ this process's first
  // environment): a resumed run draws the same tasks without saving the environments.
  Rollout r;
  const auto on = torch::TensorOptions().device(roll_dev_);
  r.next_obs = env_->reset(cfg_.seed * 1000003ULL + uint64_t(it * n_total_ + first_env_));
  if (env_->tensor_stepping()) return collect_tensors(it, r.next_obs);
  r.next_done = torch::zeros({n_local_}, on);
  Tensor ep_ret = torch::zeros({n_local_}, on);
  for (int64_t s = 0; s < T_; ++s) {
    obs_b_[s].copy_(r.next_obs);
    done_b_[s].copy_(r.next_done);
    const double t0 = now_s();
    const auto [a, lp, v] = policy_action(r.next_obs);
    const double t1 = now_s();
    ph_.policy += t1 - t0;
    const StepResult step = env_->step(a);  // the environment clips continuous actions to [-1, 1]
    ph_.simulate += now_s() - t1;
    act_b_[s].copy_(a.reshape({n_local_, act_w_}).to(torch::kFloat));
    logp_b_[s].copy_(lp);
    val_b_[s].copy_(v);
    rew_b_[s].copy_(step.reward);
    r.next_obs = step.obs;
    r.next_done = step.terminated.to(torch::kFloat);
    ep_ret += step.reward;
    if ((s + 1) % env_->n_steps() == 0) {  // every episode ended at this step (the only host reads)
      r.episodes += n_local_;
      r.fidelity_sum += step.final_fidelity.sum().item<double>();
      r.return_sum += ep_ret.sum().item<double>();
      ep_ret.zero_();
    }
  }
  return r;
}

// The rollout with the environments stepped as tensors: the steps of collect()'s loop,
// each one call of rollout_step (captured and replayed in graph mode), the same draws in
// the same order and the same bits.
PpoRun::Rollout PpoRun::collect_tensors(int64_t it, const Tensor& first_obs) {
  TensorEnvs& envs = *env_->tensor_envs();
  if (!roll_.obs.defined()) {
    const auto on = torch::TensorOptions().device(roll_dev_);
    roll_ = {first_obs.clone(), torch::zeros({n_local_}, on), torch::zeros({n_local_}, on),
             torch::zeros({1}, on.dtype(torch::kLong)), torch::zeros({}, on.dtype(torch::kFloat64)),
             torch::zeros({}, on.dtype(torch::kFloat64))};
    graph_steps_ = cfg_.rollout_mode == "graph" || (cfg_.rollout_mode == "automatic" && roll_dev_.is_cuda());
    std::vector<at::Generator> gens;  // the actions' and the environments' (draws, shots)
    if (roll_dev_.is_cuda()) gens = {roll_gen_, envs.generator()};
    if (graph_steps_)
      for (int last = 0; last < 2; ++last)
        roll_steps_[last] = train::captured_step([this, last] { return rollout_step(last == 1); }, roll_dev_, 3, gens);
  }
  roll_.obs.copy_(first_obs);
  for (Tensor* t : {&roll_.done, &roll_.ep_ret, &roll_.row, &roll_.fid_sum, &roll_.ret_sum}) t->zero_();
  Rollout r;
  for (int64_t s = 0; s < T_; ++s) {
    const bool last = (s + 1) % env_->n_steps() == 0;
    const double t0 = now_s();
    if (graph_steps_) {
      (*roll_steps_[last ? 1 : 0])();
    } else {
      rollout_step(last);
    }
    ph_.simulate += now_s() - t0;  // (the policy's share inside: one captured step)
    envs.count(last);
    if (last) r.episodes += n_local_;
  }
  if (envs.take_bad_actions())
    throw std::runtime_error("rollout " + std::to_string(it + 1) +
                             ": the policy gave actions that are not finite (its parameters diverged); the last "
                             "checkpoint holds the run before it");
  r.fidelity_sum = roll_.fid_sum.item<double>();
  r.return_sum = roll_.ret_sum.item<double>();
  r.next_obs = roll_.obs;
  r.next_done = roll_.done;
  return r;
}

// One rollout step on collect_tensors' tensors: no host read, no host state changed.
train::Metrics PpoRun::rollout_step(bool last) {
  obs_b_.index_copy_(0, roll_.row, roll_.obs.unsqueeze(0));
  done_b_.index_copy_(0, roll_.row, roll_.done.unsqueeze(0));
  const auto [a, lp, v] = policy_action(roll_.obs);
  const StepResult step = env_->tensor_envs()->advance(a, last);
  act_b_.index_copy_(0, roll_.row, a.reshape({1, n_local_, act_w_}).to(torch::kFloat));
  logp_b_.index_copy_(0, roll_.row, lp.unsqueeze(0));
  val_b_.index_copy_(0, roll_.row, v.unsqueeze(0));
  rew_b_.index_copy_(0, roll_.row, step.reward.unsqueeze(0));
  roll_.obs.copy_(step.obs);
  roll_.done.copy_(step.terminated);
  roll_.ep_ret.add_(step.reward);
  if (last) {
    roll_.fid_sum.add_(step.final_fidelity.sum());
    roll_.ret_sum.add_(roll_.ep_ret.sum());
    roll_.ep_ret.zero_();
  }
  roll_.row.add_(1);
  return {};
}

std::string PpoRun::rollout_mode_status() const {
  if (!env_->tensor_stepping()) return "eager: the environments step in the host loop";
  if (!graph_steps_) return "eager: rollout_mode = " + cfg_.rollout_mode + " on " + roll_dev_.str();
  if (!roll_steps_[0]) return "no rollout yet";
  return "inside an episode: " + roll_steps_[0]->status() + "; last step: " + roll_steps_[1]->status();
}

PpoRun::Update PpoRun::update(const Rollout& r) {
  const double t_upd = now_s();
  const auto on = torch::TensorOptions().device(roll_dev_);
  Tensor adv = torch::zeros({T_, n_local_}, on), next_value;  // GAE (CleanRL's recursion), on the rollout's device
  {
    torch::NoGradGuard ng;
    next_value = roller_->value(r.next_obs);
  }
  Tensor lastgaelam = torch::zeros({n_local_}, on);
  for (int64_t s = T_ - 1; s >= 0; --s) {
    const Tensor nonterminal = s == T_ - 1 ? 1.0 - r.next_done : 1.0 - done_b_[s + 1];
    const Tensor nextvalues = s == T_ - 1 ? next_value : val_b_[s + 1];
    const Tensor delta = rew_b_[s] + cfg_.gamma * nextvalues * nonterminal - val_b_[s];
    lastgaelam = delta + cfg_.gamma * cfg_.gae_lambda * nonterminal * lastgaelam;
    adv[s].copy_(lastgaelam);
  }
  const Tensor ret = adv + val_b_;
  const Update u = minibatch_epochs(
      obs_b_.reshape({batch_, obs_dim_}).to(upd_dev_), act_b_.reshape({batch_, act_w_}).to(upd_dev_),
      logp_b_.reshape({batch_}).to(upd_dev_), adv.reshape({batch_}).to(upd_dev_), ret.reshape({batch_}).to(upd_dev_),
      val_b_.reshape({batch_}).to(upd_dev_));
  sync_roller();
  ph_.update += now_s() - t_upd;
  return u;
}

PpoRun::Update PpoRun::minibatch_epochs(const Tensor& b_obs, const Tensor& b_act, const Tensor& b_logp,
                                        const Tensor& b_adv, const Tensor& b_ret, const Tensor& b_val) {
  Update u;
  bool stop = false;
  for (int64_t epoch = 0; epoch < cfg_.update_epochs && !stop; ++epoch) {
    const Tensor perm = torch::randperm(batch_, gen_, torch::kLong).to(upd_dev_);
    for (int64_t start = 0; start < batch_; start += mb_) {
      const Tensor idx = perm.slice(0, start, start + mb_);
      Tensor loss, pg_loss, v_loss, ent_mean, approx_kl, cf;
      {
        train::AutocastScope ac(prec_);
        const Tensor mb_act =
            discrete_ ? b_act.index_select(0, idx).squeeze(-1).to(torch::kLong) : b_act.index_select(0, idx);
        auto [a_, newlogp, entropy, newvalue] = agent_->act(b_obs.index_select(0, idx), mb_act, nullptr);
        newlogp = newlogp.to(torch::kFloat);
        newvalue = newvalue.to(torch::kFloat);
        const Tensor logratio = newlogp - b_logp.index_select(0, idx), ratio = logratio.exp();
        {
          torch::NoGradGuard ng;
          approx_kl = ((ratio - 1) - logratio).mean();
          cf = ((ratio - 1.0).abs() > cfg_.clip_coef).to(torch::kFloat).mean();
        }
        Tensor mb_adv = b_adv.index_select(0, idx);
        if (cfg_.norm_adv) mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8);
        pg_loss = torch::max(-mb_adv * ratio, -mb_adv * ratio.clamp(1 - cfg_.clip_coef, 1 + cfg_.clip_coef)).mean();
        const Tensor mb_ret = b_ret.index_select(0, idx), mb_val = b_val.index_select(0, idx);
        if (cfg_.clip_vloss) {
          const Tensor unclipped = (newvalue - mb_ret).pow(2);
          const Tensor clipped = mb_val + (newvalue - mb_val).clamp(-cfg_.clip_coef, cfg_.clip_coef);
          v_loss = 0.5 * torch::max(unclipped, (clipped - mb_ret).pow(2)).mean();
        } else {
          v_loss = 0.5 * (newvalue - mb_ret).pow(2).mean();
        }
        ent_mean = entropy.to(torch::kFloat).mean();
        loss = pg_loss - cfg_.ent_coef * ent_mean + cfg_.vf_coef * v_loss;
      }
      optimizer_->zero_grad();
      loss.backward();
      if (group_) {  // data parallel: the mean of the processes' minibatch gradients
        for (auto& p : agent_->parameters())
          if (p.grad().defined()) {
            Tensor g = p.grad();
            group_->all_reduce_sum(g);
            g.div_(double(world_));
          }
      }
      torch::nn::utils::clip_grad_norm_(agent_->parameters(), cfg_.max_grad_norm);
      optimizer_->step();
      u.pg += pg_loss.item<double>();
      u.v += v_loss.item<double>();
      u.entropy += ent_mean.item<double>();
      u.kl_last = approx_kl.item<double>();
      u.clipfrac += cf.item<double>();
      ++u.minibatches;
    }
    if (cfg_.target_kl > 0 && u.kl_last > cfg_.target_kl) stop = true;
  }
  return u;
}

json PpoRun::record(int64_t it, const Rollout& r, const Update& u) {
  Tensor tot = torch::tensor({r.fidelity_sum, r.return_sum, double(r.episodes)}, torch::kFloat64);
  if (group_) group_->all_reduce_sum(tot);
  const double episodes = tot[2].item<double>();
  const bool eval_now = (it + 1) % cfg_.eval_every == 0 || it + 1 == iterations_;
  if (eval_now) {
    const double t0 = now_s();
    const Evaluation ev = evaluate(roller_, cfg_.env, val_tasks_, roll_dev_);
    ph_.evaluate += now_s() - t0;
    last_val_ = ev.fidelity.mean().item<double>();
  }
  const double n_mb = double(u.minibatches);
  json row = {{"rollout", it + 1},
              {"env_steps", (it + 1) * n_total_ * T_},
              {"wall_s", wall()},
              {"episodes", episodes},
              {"mean_final_fidelity", episodes > 0 ? tot[0].item<double>() / episodes : 0.0},
              {"mean_return", episodes > 0 ? tot[1].item<double>() / episodes : 0.0},
              {"pg_loss", u.pg / n_mb},
              {"v_loss", u.v / n_mb},
              {"entropy", u.entropy / n_mb},
              {"approx_kl", u.kl_last},
              {"clipfrac", u.clipfrac / n_mb},
              {"log_std", discrete_ ? 0.0 : agent_->log_std.mean().item<double>()}};
  if (eval_now) row["validation_fidelity"] = last_val_;
  curve_.push_back(row);
  return row;
}

void PpoRun::save(int64_t step, double wall_s) {
  state_.step = step;
  records_ = json{{"curve", curve_}, {"phases", ph_.to_json()}, {"wall_s", wall_s}}.dump();
  train::save_checkpoint(ckpt_, state_);
  train::write_file_atomic(curve_path_, records_);
}

// loop.seconds (this call's loop) is part of wall(), which also counts the resumed runs'.
json PpoRun::finish(const app::Loop& loop) {
  namespace fs = std::filesystem;
  const int64_t it = done_;
  const bool complete = it >= iterations_;
  const double wall_s = wall();
  if (rank_ == 0 && it == loop.first) save(it, wall_s);  // no rollout ran: the runner saved nothing

  // final evaluation, pulses and the independent `qfleet eval` problems
  const Evaluation ev = evaluate(roller_, cfg_.env, val_tasks_, roll_dev_);
  json report = app::report_header("qfleet-rl", cfg_.to_json(), cfg_.seed, run_clock_);
  report.update({{"complete", complete},
                 {"rollouts", it},
                 {"env_steps", it * n_total_ * T_},
                 {"processes", world_},
                 {"environment", env_->describe()},
                 {"devices", {{"rollout", roll_dev_.str()}, {"rollout_why", why_roll_},
                              {"rollout_mode", rollout_mode_status()}, {"update", upd_dev_.str()},
                              {"update_why", why_upd_}, {"precision", prec_.rule}, {"rollout_precision", roll_prec_.rule}}},
                 {"timings_s", {{"wall", wall_s}, {"phases", ph_.to_json()}}},
                 {"curve", curve_}});
  json tasks = json::array();
  const Tensor vt = val_tasks_.to(torch::kFloat64);
  for (int64_t b = 0; b < vt.size(0); ++b) {
    json t = {{"fidelity", ev.fidelity[b].item<double>()}};
    for (std::size_t k = 0; k < task_.param_names.size(); ++k) t[task_.param_names[k]] = vt[b][int64_t(k)].item<double>();
    tasks.push_back(t);
  }
  report["validation"] = {{"tasks", tasks}, {"mean_fidelity", ev.fidelity.mean().item<double>()},
                          {"min_fidelity", ev.fidelity.min().item<double>()}};
  if (rank_ == 0) {
    const fs::path dir(cfg_.output_dir);
    fs::create_directories(dir / "eval");
    const auto problems = eval_problems(cfg_.env, ev.amplitudes, val_tasks_);
    for (std::size_t b = 0; b < problems.size(); ++b)
      train::write_file_atomic((dir / "eval" / ("task_" + std::to_string(b) + ".json")).string(), problems[b].dump());
    train::TensorFile policy;  // data only (qfleet/tensor_file.hpp): what a reader loads cannot run code
    policy.format = "qfleet-rl-policy/1";
    train::put_module(policy, "agent", *agent_);
    train::write_tensor_file((dir / "policy.pt").string(), policy);
    train::write_file_atomic((dir / "report.json").string(), report.dump(1));
  }
  if (!opt_.quiet && rank_ == 0)
    std::cout << "qfleet-rl: " << it * n_total_ * T_ << " env steps in " << wall_s
              << " s; validation mean final fidelity " << report["validation"]["mean_fidelity"].get<double>() << " over "
              << vt.size(0) << " tasks\n";
  return report;
}

}  // namespace

json train_ppo(const PpoConfig& cfg, const TrainOptions& opt) {
  const auto setup = [&] {
    return "setting up the environments and the agent (task = " + cfg.env.task + ", num_envs = " +
           std::to_string(cfg.env.num_envs) + ", device = " + cfg.device + ")";
  };
  return app::doing(setup, [&] {  // (the run's own phases, inside, name themselves)
    PpoRun run(cfg, opt);
    return app::run_lifecycle(run);
  });
}

}  // namespace qfleet::rl
