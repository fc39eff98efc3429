// The PPO training loop (ppo.hpp; docs/rl.md). Step for step CleanRL's
// ppo_continuous_action.py: rollout, GAE, minibatch epochs of the clipped objective.
#include "ppo.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>

#include "evaluation.hpp"
#include "qfleet/train.hpp"
#include "common/report_header.hpp"

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

// The runtime's device choice for a phase: `auto` times each available device.
torch::Device pick(const std::string& setting, const std::function<std::function<Tensor()>(const torch::Device&)>& make,
                   std::string& why) {
  if (setting != "auto") return train::device_from_setting(setting, &why);
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

}  // namespace

json train_ppo(const PpoConfig& cfg_in, const TrainOptions& opt) {
  const Float32Default float32_default;
  PpoConfig cfg = cfg_in;
  namespace fs = std::filesystem;
  const int rank = opt.nproc_rank, world = opt.nproc_world;
  std::unique_ptr<train::ProcessGroup> group;
  if (world > 1) {
    auto d = train::dist_from_env();
    if (!d) throw std::invalid_argument("nproc > 1 needs RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT (qfleet-rl --nproc sets them)");
    group = std::make_unique<train::ProcessGroup>(*d);
  }
  if (cfg.env.num_envs % world != 0)
    throw std::invalid_argument("num_envs (" + std::to_string(cfg.env.num_envs) + ") must be a multiple of the process count " + std::to_string(world));
  if (cfg.threads > 0) torch::set_num_threads(int(cfg.threads));
  const TaskSpec task = make_task(cfg.env);
  const int64_t n_total = cfg.env.num_envs, n_local = n_total / world, first_env = rank * n_local;
  const int64_t T = cfg.rollout_steps > 0 ? cfg.rollout_steps : task.n_steps;
  const int64_t batch = n_local * T;
  if (batch % cfg.num_minibatches != 0 || batch / cfg.num_minibatches < 1)
    throw std::invalid_argument("num_minibatches (" + std::to_string(cfg.num_minibatches) + ") must divide the rollout batch " +
                                std::to_string(batch) + " (num_envs per process x rollout_steps)");
  const int64_t iterations = std::max<int64_t>(1, cfg.total_steps / (n_total * T));
  const int64_t mb = batch / cfg.num_minibatches;

  EnvConfig ec = cfg.env;
  ec.num_envs = n_local;
  ec.device = "cpu";
  ec.threads = cfg.threads;
  VecEnv env(ec);
  const bool discrete = env.discrete();
  const int64_t n_out = discrete ? env.n_actions() : env.n_controls();

  torch::manual_seed(cfg.seed);  // orthogonal init draws from the default generator
  Agent agent(env.obs_dim(), n_out, discrete, cfg.hidden, cfg.init_log_std);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(cfg.seed + 7);  // actions, minibatch order

  // ---- devices: the runtime times each phase on each device (auto) or takes the setting.
  std::string why_roll, why_upd;
  const torch::Device roll_dev = pick(cfg.device, [&](const torch::Device& d) {
    auto a = std::make_shared<Agent>(env.obs_dim(), n_out, discrete, cfg.hidden, cfg.init_log_std);
    (*a)->to(d);
    auto x = torch::randn({n_local, env.obs_dim()}).to(d);
    return std::function<Tensor()>([a, x] { torch::NoGradGuard ng; return (*a)->deterministic(x).sum(); });
  }, why_roll);
  const torch::Device upd_dev = pick(cfg.device, [&](const torch::Device& d) {
    auto a = std::make_shared<Agent>(env.obs_dim(), n_out, discrete, cfg.hidden, cfg.init_log_std);
    (*a)->to(d);
    auto opt2 = std::make_shared<torch::optim::Adam>((*a)->parameters(), torch::optim::AdamOptions(1e-4));
    auto x = torch::randn({mb, env.obs_dim()}).to(d);
    return std::function<Tensor()>([a, x, opt2] {
      opt2->zero_grad();
      Tensor l = (*a)->value(x).pow(2).mean() + (*a)->deterministic(x).float_power(2).mean().to(torch::kFloat);
      l.backward();
      opt2->step();
      return l.detach();
    });
  }, why_upd);
  const train::PrecisionPolicy prec = train::precision_policy(upd_dev), roll_prec = train::precision_policy(roll_dev);
  train::apply_backend_switches(prec);
  agent->to(upd_dev);
  Agent roller = agent;  // the same module unless the phases run on different devices
  if (roll_dev != upd_dev) {
    roller = Agent(env.obs_dim(), n_out, discrete, cfg.hidden, cfg.init_log_std);
    roller->to(roll_dev);
  }
  auto sync_roller = [&] {
    if (roll_dev == upd_dev) return;
    torch::NoGradGuard ng;
    auto src = agent->parameters(), dst = roller->parameters();
    for (std::size_t i = 0; i < src.size(); ++i) dst[i].copy_(src[i]);
  };
  sync_roller();
  torch::optim::Adam optimizer(agent->parameters(), torch::optim::AdamOptions(cfg.learning_rate).eps(1e-5));

  // ---- validation tasks (the meta-control app's for qubit_x / cz with this seed)
  const Tensor val_tasks = validation_tasks(cfg.env, cfg.validation_tasks, cfg.seed);

  // ---- checkpoint and resume
  fs::create_directories(cfg.output_dir);
  const std::string ckpt = (fs::path(cfg.output_dir) / "checkpoint.pt").string();
  const std::string curve_path = (fs::path(cfg.output_dir) / "curve.json").string();
  json cfg_json = cfg.to_json();
  cfg_json.erase("output_dir");
  train::TrainState state;
  state.config = cfg_json.dump();
  state.modules = {{"agent", agent.ptr().get()}};
  state.optimizers = {{"adam", &optimizer}};
  state.generators = {{"policy", gen}};
  json curve = json::array();
  Phases ph;
  double wall_before = 0;
  int64_t first = 0;
  if (opt.resume && fs::exists(ckpt)) {
    train::load_checkpoint(ckpt, state);
    first = state.step;
    std::ifstream in(curve_path);
    const json saved = json::parse(in, nullptr, false);
    if (saved.is_discarded() || !saved.contains("curve"))
      throw train::CheckpointError(curve_path + ": missing or damaged (it travels with the checkpoint)");
    for (const auto& row : saved["curve"])
      if (row["rollout"].get<int64_t>() <= first) curve.push_back(row);
    ph.simulate = saved["phases"]["simulate"];
    ph.policy = saved["phases"]["policy"];
    ph.update = saved["phases"]["update"];
    ph.evaluate = saved["phases"]["evaluate"];
    wall_before = saved["wall_s"];
    sync_roller();
  }

  const int64_t obs_dim = env.obs_dim(), act_w = discrete ? 1 : n_out;
  Tensor obs_b = torch::zeros({T, n_local, obs_dim}), act_b = torch::zeros({T, n_local, act_w}),
         logp_b = torch::zeros({T, n_local}), rew_b = torch::zeros({T, n_local}), done_b = torch::zeros({T, n_local}),
         val_b = torch::zeros({T, n_local});
  train::ProgressBar bar;
  const double t_start = now_s();
  double last_val = std::numeric_limits<double>::quiet_NaN();
  auto all_sum = [&](Tensor t) {
    if (group) group->all_reduce_sum(t);
    return t;
  };

  auto evaluate_now = [&] {
    const double t0 = now_s();
    const Evaluation ev = evaluate(roller, cfg.env, val_tasks, roll_dev);
    ph.evaluate += now_s() - t0;
    last_val = ev.fidelity.mean().item<double>();
  };

  int64_t it = first;
  for (; it < iterations; ++it) {
    if (opt.stop_after >= 0 && it - first >= opt.stop_after) break;
    if (cfg.anneal_lr) {
      const double lr = (1.0 - double(it) / double(iterations)) * cfg.learning_rate;
      for (auto& g : optimizer.param_groups()) static_cast<torch::optim::AdamOptions&>(g.options()).lr(lr);
    }
    // Each rollout starts fresh episodes from seed + it x num_envs (+ this process's first
    // environment): a resumed run draws the same tasks without saving the environments.
    Tensor next_obs = env.reset(cfg.seed * 1000003ULL + uint64_t(it * n_total + first_env));
    Tensor next_done = torch::zeros({n_local});
    double ep_fid = 0, ep_ret_sum = 0;
    int64_t ep_count = 0;
    Tensor ep_ret = torch::zeros({n_local});
    for (int64_t s = 0; s < T; ++s) {
      obs_b[s].copy_(next_obs);
      done_b[s].copy_(next_done);
      double t0 = now_s();
      Tensor a, lp, v;
      {
        torch::NoGradGuard ng;
        train::AutocastScope ac(roll_prec);  // BF16 policy where the runtime's rule says so
        auto [a_, lp_, ent_, v_] = roller->act(next_obs.to(roll_dev), Tensor(), &gen);
        a = discrete ? a_.to(torch::kCPU) : a_.to(torch::kCPU, torch::kFloat);
        lp = lp_.to(torch::kCPU, torch::kFloat);
        v = v_.to(torch::kCPU, torch::kFloat);
      }
      double t1 = now_s();
      ph.policy += t1 - t0;
      const StepResult r = env.step(a);  // the environment clips continuous actions to [-1, 1]
      ph.simulate += now_s() - t1;
      act_b[s].copy_(a.reshape({n_local, act_w}).to(torch::kFloat));
      logp_b[s].copy_(lp);
      val_b[s].copy_(v);
      rew_b[s].copy_(r.reward);
      next_obs = r.obs;
      next_done = r.terminated.to(torch::kFloat);
      ep_ret += r.reward;
      const Tensor ended = r.terminated;
      const int64_t k = ended.sum().item<int64_t>();
      if (k > 0) {
        ep_count += k;
        ep_fid += r.final_fidelity.masked_select(ended).sum().item<double>();
        ep_ret_sum += ep_ret.masked_select(ended).sum().item<double>();
        ep_ret.masked_fill_(ended, 0.0);
      }
    }
    // ---- GAE (CleanRL's recursion)
    const double t_upd = now_s();
    Tensor adv = torch::zeros({T, n_local}), next_value;
    {
      torch::NoGradGuard ng;
      next_value = roller->value(next_obs.to(roll_dev)).to(torch::kCPU);
    }
    Tensor lastgaelam = torch::zeros({n_local});
    for (int64_t s = T - 1; s >= 0; --s) {
      const Tensor nonterminal = s == T - 1 ? 1.0 - next_done : 1.0 - done_b[s + 1];
      const Tensor nextvalues = s == T - 1 ? next_value : val_b[s + 1];
      const Tensor delta = rew_b[s] + cfg.gamma * nextvalues * nonterminal - val_b[s];
      lastgaelam = delta + cfg.gamma * cfg.gae_lambda * nonterminal * lastgaelam;
      adv[s].copy_(lastgaelam);
    }
    const Tensor ret = adv + val_b;
    const Tensor b_obs = obs_b.reshape({batch, obs_dim}).to(upd_dev), b_act = act_b.reshape({batch, act_w}).to(upd_dev),
                 b_logp = logp_b.reshape({batch}).to(upd_dev), b_adv = adv.reshape({batch}).to(upd_dev),
                 b_ret = ret.reshape({batch}).to(upd_dev), b_val = val_b.reshape({batch}).to(upd_dev);
    double pg_sum = 0, v_sum = 0, ent_sum = 0, kl_last = 0, clipfrac = 0;
    int64_t n_mb = 0;
    bool stop = false;
    for (int64_t epoch = 0; epoch < cfg.update_epochs && !stop; ++epoch) {
      const Tensor perm = torch::randperm(batch, gen, torch::kLong).to(upd_dev);
      for (int64_t start = 0; start < batch; start += mb) {
        const Tensor idx = perm.slice(0, start, start + mb);
        Tensor loss, pg_loss, v_loss, ent_mean, approx_kl, cf;
        {
          train::AutocastScope ac(prec);
          const Tensor mb_act = discrete ? b_act.index_select(0, idx).squeeze(-1).to(torch::kLong) : b_act.index_select(0, idx);
          auto [a_, newlogp, entropy, newvalue] = agent->act(b_obs.index_select(0, idx), mb_act, nullptr);
          newlogp = newlogp.to(torch::kFloat);
          newvalue = newvalue.to(torch::kFloat);
          const Tensor logratio = newlogp - b_logp.index_select(0, idx), ratio = logratio.exp();
          {
            torch::NoGradGuard ng;
            approx_kl = ((ratio - 1) - logratio).mean();
            cf = ((ratio - 1.0).abs() > cfg.clip_coef).to(torch::kFloat).mean();
          }
          Tensor mb_adv = b_adv.index_select(0, idx);
          if (cfg.norm_adv) mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8);
          pg_loss = torch::max(-mb_adv * ratio, -mb_adv * ratio.clamp(1 - cfg.clip_coef, 1 + cfg.clip_coef)).mean();
          const Tensor mb_ret = b_ret.index_select(0, idx), mb_val = b_val.index_select(0, idx);
          if (cfg.clip_vloss) {
            const Tensor unclipped = (newvalue - mb_ret).pow(2);
            const Tensor clipped = mb_val + (newvalue - mb_val).clamp(-cfg.clip_coef, cfg.clip_coef);
            v_loss = 0.5 * torch::max(unclipped, (clipped - mb_ret).pow(2)).mean();
          } else {
            v_loss = 0.5 * (newvalue - mb_ret).pow(2).mean();
          }
          ent_mean = entropy.to(torch::kFloat).mean();
          loss = pg_loss - cfg.ent_coef * ent_mean + cfg.vf_coef * v_loss;
        }
        optimizer.zero_grad();
        loss.backward();
        if (group) {  // data parallel: the mean of the processes' minibatch gradients
          for (auto& p : agent->parameters())
            if (p.grad().defined()) {
              Tensor g = p.grad();
              group->all_reduce_sum(g);
              g.div_(double(world));
            }
        }
        torch::nn::utils::clip_grad_norm_(agent->parameters(), cfg.max_grad_norm);
        optimizer.step();
        pg_sum += pg_loss.item<double>();
        v_sum += v_loss.item<double>();
        ent_sum += ent_mean.item<double>();
        kl_last = approx_kl.item<double>();
        clipfrac += cf.item<double>();
        ++n_mb;
      }
      if (cfg.target_kl > 0 && kl_last > cfg.target_kl) stop = true;
    }
    sync_roller();
    ph.update += now_s() - t_upd;

    // ---- bookkeeping
    Tensor tot = all_sum(torch::tensor({ep_fid, ep_ret_sum, double(ep_count)}, torch::kFloat64));
    const double episodes = tot[2].item<double>();
    const bool eval_now = (it + 1) % cfg.eval_every == 0 || it + 1 == iterations;
    if (eval_now) evaluate_now();
    json row = {{"rollout", it + 1},
                {"env_steps", (it + 1) * n_total * T},
                {"wall_s", wall_before + now_s() - t_start},
                {"episodes", episodes},
                {"mean_final_fidelity", episodes > 0 ? tot[0].item<double>() / episodes : 0.0},
                {"mean_return", episodes > 0 ? tot[1].item<double>() / episodes : 0.0},
                {"pg_loss", pg_sum / double(n_mb)},
                {"v_loss", v_sum / double(n_mb)},
                {"entropy", ent_sum / double(n_mb)},
                {"approx_kl", kl_last},
                {"clipfrac", clipfrac / double(n_mb)},
                {"log_std", discrete ? 0.0 : agent->log_std.mean().item<double>()}};
    if (eval_now) row["validation_fidelity"] = last_val;
    curve.push_back(row);
    if (opt.progress && rank == 0) {
      char note[96];
      std::snprintf(note, sizeof note, "F %.4f  val %.4f", row["mean_final_fidelity"].get<double>(), last_val);
      bar.update(it + 1, iterations, note);
    }
    const bool ckpt_now = cfg.checkpoint_every > 0 && (it + 1) % cfg.checkpoint_every == 0;
    if (ckpt_now && rank == 0) {
      state.step = it + 1;
      train::save_checkpoint(ckpt, state);
      train::write_file_atomic(curve_path, json{{"curve", curve}, {"phases", ph.to_json()},
                                                {"wall_s", wall_before + now_s() - t_start}}.dump());
    }
  }
  if (opt.progress && rank == 0) bar.finish();
  const bool complete = it >= iterations;
  const double wall = wall_before + now_s() - t_start;
  if (rank == 0) {
    state.step = it;
    train::save_checkpoint(ckpt, state);
    train::write_file_atomic(curve_path, json{{"curve", curve}, {"phases", ph.to_json()}, {"wall_s", wall}}.dump());
  }

  // ---- final evaluation, pulses and the independent `qfleet eval` problems
  const Evaluation ev = evaluate(roller, cfg.env, val_tasks, roll_dev);
  json report = app::report_header("qfleet-rl", cfg.to_json(), cfg.seed);
  report.update({{"complete", complete},
                 {"rollouts", it},
                 {"env_steps", it * n_total * T},
                 {"processes", world},
                 {"environment", env.describe()},
                 {"devices", {{"rollout", roll_dev.str()}, {"rollout_why", why_roll}, {"update", upd_dev.str()},
                              {"update_why", why_upd}, {"precision", prec.rule}, {"rollout_precision", roll_prec.rule}}},
                 {"timings_s", {{"wall", wall}, {"phases", ph.to_json()}}},
                 {"curve", curve}});
  json tasks = json::array();
  const Tensor vt = val_tasks.to(torch::kFloat64);
  for (int64_t b = 0; b < vt.size(0); ++b) {
    json t = {{"fidelity", ev.fidelity[b].item<double>()}};
    for (std::size_t k = 0; k < task.param_names.size(); ++k) t[task.param_names[k]] = vt[b][int64_t(k)].item<double>();
    tasks.push_back(t);
  }
  report["validation"] = {{"tasks", tasks}, {"mean_fidelity", ev.fidelity.mean().item<double>()},
                          {"min_fidelity", ev.fidelity.min().item<double>()}};
  if (rank == 0) {
    const fs::path dir(cfg.output_dir);
    fs::create_directories(dir / "eval");
    const auto problems = eval_problems(cfg.env, ev.amplitudes, val_tasks);
    for (std::size_t b = 0; b < problems.size(); ++b)
      train::write_file_atomic((dir / "eval" / ("task_" + std::to_string(b) + ".json")).string(), problems[b].dump());
    torch::save(agent, (dir / "policy.pt").string());
    train::write_file_atomic((dir / "report.json").string(), report.dump(1));
  }
  if (!opt.quiet && rank == 0)
    std::cout << "qfleet-rl: " << it * n_total * T << " env steps in " << wall << " s; validation mean final fidelity "
              << report["validation"]["mean_fidelity"].get<double>() << " over " << vt.size(0) << " tasks\n";
  return report;
}

}  // namespace qfleet::rl
