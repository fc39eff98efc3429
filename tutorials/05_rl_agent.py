"""Tutorial 5: train a reinforcement-learning agent on qfleet's Gymnasium vector environments.

The task. An agent drives a noisy qubit, one control segment per step, and is rewarded at the
end of the episode with the average gate fidelity of what it did to an X gate. Each episode
draws new noise (dephasing and relaxation rates, the ranges of docs/rl.md), which the agent
does not see. This is `qfleet/QubitX-v0`: 60 steps of 1/60, actions (a_x, a_y) in [-1, 1]^2
scaling the drive u_x X/2 + u_y Y/2 with |u| <= 2 pi, observations the 12 entries of the
Pauli transfer matrix of the channel so far plus the elapsed fraction of the episode.

Why qfleet. `gym.make_vec(..., vectorization_mode="vector_entry_point")` gives a Gymnasium
VectorEnv whose N environments are stepped by one batched engine call, in C++, and whose
observations, rewards and flags are torch tensors: the rollout never leaves torch and the
simulator is not the bottleneck, even for thousands of environments.

The agent is a small PPO written here in about sixty lines (a Gaussian policy and a value
network, both 2 x 64 tanh MLPs; generalised advantage estimation; the clipped surrogate), to
show the environment used as any Gymnasium user would. For the full algorithm with every
CleanRL detail, run the app: `python -m qfleet.rl` (docs/rl.md).

What to look at.
1. The training log: the mean final fidelity of the episodes rises from a random policy's
   level towards 1 (an X gate is reachable: a constant a_x = 0.5 is a pi rotation).
2. The evaluation: the trained policy's deterministic pulse (its mean action) against the
   random policy, on the same fresh tasks; asserted: at least 0.9 and above random by 0.3
   (with --short, which trains for fewer updates: 0.1 above random). Beside them, the best
   single pulse for the same tasks from qfleet.control's robust GRAPE (an Ensemble of the
   tasks' rates): the full run's agent must come within 0.02 of it.
3. The check: the environment's reported fidelity for one task equals an independent
   NumPy/SciPy replay of the same pulse (Liouvillians from the environment's documented
   physics, scipy.linalg.expm) to 1e-9.

Run it:

    python tutorials/05_rl_agent.py            # 40 updates of 128 environments x 60 steps
    python tutorials/05_rl_agent.py --short    # 6 updates (what the test runs)

(from a checkout: `PYTHONPATH=python`, see docs/torch.md). QFLEET_TUTORIAL_SHORT=1 is the same
as --short.
"""
import argparse
import os
import time

import gymnasium as gym
import numpy as np
import scipy.linalg
import torch

import qfleet
import qfleet.rl  # noqa: F401  (registers the qfleet/... environment ids with Gymnasium)
from qfleet import control

N_ENVS = 128


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--short", action="store_true", help="small settings (what the test runs)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    args.short = args.short or os.environ.get("QFLEET_TUTORIAL_SHORT") == "1"
    return args


class Agent(torch.nn.Module):
    """A Gaussian policy (mean from an MLP, a learned state-independent log std) and a value MLP."""

    def __init__(self, n_obs, n_act):
        super().__init__()
        mlp = lambda n_out: torch.nn.Sequential(  # noqa: E731
            torch.nn.Linear(n_obs, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64), torch.nn.Tanh(),
            torch.nn.Linear(64, n_out))
        self.actor, self.critic = mlp(n_act), mlp(1)
        self.log_std = torch.nn.Parameter(torch.full((n_act,), -1.0))
        with torch.no_grad():  # start with small mean actions, as PPO implementations do
            self.actor[-1].weight.mul_(0.01)
            self.actor[-1].bias.zero_()

    def dist(self, obs):
        return torch.distributions.Normal(self.actor(obs), self.log_std.exp())

    def value(self, obs):
        return self.critic(obs).squeeze(-1)


def rollout(envs, agent, obs, n_steps, deterministic=False, random_policy=False):
    """One episode of every environment from the observations obs (they all end together, at
    step n_steps). Returns the buffers, the final fidelities reported by the environments and
    the next episode's first observations."""
    obs_buf, act_buf, logp_buf, rew_buf = [], [], [], []
    for _ in range(n_steps):
        with torch.no_grad():
            if random_policy:
                action = torch.from_numpy(envs.action_space.sample())
            else:
                d = agent.dist(obs)
                action = d.mean if deterministic else d.sample()
                logp_buf.append(d.log_prob(action).sum(-1))
        obs_buf.append(obs)
        act_buf.append(action)
        # One step of all environments: one batched engine call. Actions outside [-1, 1] are clipped.
        obs, reward, terminated, truncated, info = envs.step(action)
        rew_buf.append(reward)
    assert bool(terminated.all()), "every episode ends at the same step"
    # Same-step autoreset: obs is already the next episode's first observation, and the ended
    # episodes' results are in info["final_obs"] and info["final_info"].
    final_fidelity = torch.as_tensor(info["final_info"]["fidelity"])
    return (obs_buf, act_buf, logp_buf, rew_buf), final_fidelity, obs


def ppo_update(agent, opt, obs_buf, act_buf, logp_buf, rew_buf, epochs=4, minibatches=4, clip=0.2, lam=0.95):
    """PPO's clipped surrogate on one rollout; gamma = 1 (the reward is the fidelity at a fixed end)."""
    obs, act = torch.stack(obs_buf), torch.stack(act_buf)  # [T, N, ...]
    logp_old, rew = torch.stack(logp_buf), torch.stack(rew_buf)
    with torch.no_grad():  # generalised advantage estimation; the value after the last step is 0
        values = agent.value(obs)
        adv, last = torch.zeros_like(rew), torch.zeros_like(rew[0])
        for t in reversed(range(len(rew))):
            next_value = values[t + 1] if t + 1 < len(rew) else torch.zeros_like(last)
            last = rew[t] + next_value - values[t] + lam * last
            adv[t] = last
        returns = adv + values
    flat = lambda x: x.reshape(-1, *x.shape[2:])  # noqa: E731
    obs, act, logp_old, adv, returns = map(flat, (obs, act, logp_old, adv, returns))
    for _ in range(epochs):
        for idx in torch.randperm(len(obs)).chunk(minibatches):
            d = agent.dist(obs[idx])
            ratio = (d.log_prob(act[idx]).sum(-1) - logp_old[idx]).exp()
            a = (adv[idx] - adv[idx].mean()) / (adv[idx].std() + 1e-8)
            policy_loss = -torch.min(ratio * a, ratio.clamp(1 - clip, 1 + clip) * a).mean()
            value_loss = 0.5 * (agent.value(obs[idx]) - returns[idx]).square().mean()
            loss = policy_loss + value_loss - 1e-3 * d.entropy().sum(-1).mean()
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
            opt.step()


def replay_fidelity(amplitudes, gamma_deph, gamma_relax, dt):
    """Independent check: the X-gate average fidelity of a pulse, from scipy.linalg.expm of
    column-stacked Liouvillians (vec(A X B) = (B^T kron A) vec(X)), with the environment's
    documented jumps: sqrt(gamma_relax) |0><1| and sqrt(gamma_deph / 2) Z."""
    X = np.array([[0, 1], [1, 0]], dtype=complex)
    Y = np.array([[0, -1j], [1j, 0]])
    Z = np.diag([1.0, -1.0]).astype(complex)
    jumps = [np.sqrt(gamma_relax) * np.array([[0, 1], [0, 0]], dtype=complex), np.sqrt(gamma_deph / 2) * Z]
    eye, channel = np.eye(2), np.eye(4, dtype=complex)
    for ux, uy in amplitudes:
        h = ux * X / 2 + uy * Y / 2
        lv = -1j * (np.kron(eye, h) - np.kron(h.T, eye))
        for c in jumps:
            cdc = c.conj().T @ c
            lv += np.kron(c.conj(), c) - 0.5 * np.kron(eye, cdc) - 0.5 * np.kron(cdc.T, eye)
        channel = scipy.linalg.expm(lv * dt) @ channel
    f_pro = np.real(np.trace(np.kron(X.conj(), X).conj().T @ channel)) / 4
    return (2 * f_pro + 1) / 3


def robust_grape(tasks, n_steps, dt, max_amplitude):
    """Mean fidelity over `tasks` of the one pulse that maximises it (L-BFGS-B, exact gradients)."""
    X = torch.tensor([[0, 1], [1, 0]], dtype=torch.complex128)
    Y = torch.tensor([[0, -1j], [1j, 0]], dtype=torch.complex128)
    Z = torch.tensor([[1, 0], [0, -1]], dtype=torch.complex128)
    lower = torch.tensor([[0, 1], [0, 0]], dtype=torch.complex128)
    system = (qfleet.OpenSystem(2).control(X / 2).control(Y / 2)
              .jump(Z / 2**0.5).jump(lower)  # rates in the tasks' order: gamma_deph, gamma_relax
              .segments(n_steps, n_steps * dt).target_unitary(X).propagate_gate())
    x0 = torch.zeros(n_steps, 2, dtype=torch.float64)
    x0[:, 0] = 0.5 * max_amplitude  # a pi pulse on x to start from
    res = control.optimize(system, x0, ensemble=control.Ensemble(rates=tasks.to(torch.float64)),
                           bounds=(-max_amplitude, max_amplitude), ftol=1e-12)
    return float(res.fidelity.mean())


def evaluate(envs, agent, n_steps, tasks, **policy):
    """Final fidelities on fixed tasks (the same for every policy compared)."""
    obs, _ = envs.reset(seed=123, options={"tasks": tasks})
    _, fid, _ = rollout(envs, agent, obs, n_steps, **policy)
    return fid


def main():
    args = parse_args()
    updates = 6 if args.short else 40
    torch.manual_seed(args.seed)
    # The networks are tiny: one torch thread is fastest for them, and torch's OpenMP threads
    # would otherwise spin against the engine's threads between calls (docs/torch.md, Threads).
    torch.set_num_threads(1)

    # The environments, through Gymnasium's API.
    envs = gym.make_vec("qfleet/QubitX-v0", num_envs=N_ENVS, vectorization_mode="vector_entry_point")
    n_steps = envs.qfleet_spec["n_steps"]  # the resolved settings (config: what was asked, 0 = default)
    n_obs = envs.single_observation_space.shape[0]
    n_act = envs.single_action_space.shape[0]
    print(f"{envs.num_envs} x qfleet/QubitX-v0: observations {n_obs}, actions {n_act}, {n_steps} steps an episode")
    envs.action_space.seed(args.seed)  # the random policy's draws

    agent = Agent(n_obs, n_act)
    opt = torch.optim.Adam(agent.parameters(), lr=3e-3, eps=1e-5)

    # Fixed evaluation tasks: one fresh draw of the noise, shared by every policy evaluated.
    envs.reset(seed=10_000)
    eval_tasks = envs.tasks().clone()  # [N, 2]: gamma_deph, gamma_relax
    random_fid = evaluate(envs, agent, n_steps, eval_tasks, random_policy=True)
    print(f"random policy: mean final fidelity {random_fid.mean():.4f}")

    # Training: tasks drawn afresh for every episode (reset without fixed tasks).
    obs, _ = envs.reset(seed=args.seed, options={"tasks": None})
    t0 = time.perf_counter()
    env_time = 0.0
    for u in range(1, updates + 1):
        t1 = time.perf_counter()
        buffers, fid, obs = rollout(envs, agent, obs, n_steps)
        env_time += time.perf_counter() - t1
        ppo_update(agent, opt, *buffers)
        if u == 1 or u % max(1, updates // 8) == 0 or u == updates:
            print(f"update {u:3d}: mean final fidelity of the episodes {fid.mean():.4f} "
                  f"(std of the policy {agent.log_std.exp().mean().item():.3f})")
    seconds = time.perf_counter() - t0
    steps = updates * n_steps * N_ENVS
    print(f"trained on {steps} environment steps in {seconds:.1f} s ({env_time:.1f} s of it in rollouts)")

    trained_fid = evaluate(envs, agent, n_steps, eval_tasks, deterministic=True)
    print(f"trained policy (mean action) on the same tasks: mean final fidelity {trained_fid.mean():.4f}, "
          f"worst {trained_fid.min():.4f}")

    # The independent check: replay task 0's deterministic pulse in NumPy/SciPy.
    obs, _ = envs.reset(seed=123, options={"tasks": eval_tasks})
    actions = []
    for _ in range(n_steps):
        with torch.no_grad():
            a = agent.dist(obs).mean
        actions.append(a[0].numpy().astype(np.float64))
        obs, _, _, _, info = envs.step(a)
    amplitudes = envs.qfleet_spec["max_amplitude"] * np.clip(actions, -1, 1)
    want = replay_fidelity(amplitudes, *eval_tasks[0].tolist(), dt=envs.qfleet_spec["segment_duration"])
    got = float(info["final_info"]["fidelity"][0])
    print(f"check vs a SciPy replay of task 0's pulse: environment {got:.10f}, SciPy {want:.10f}")
    assert abs(got - want) < 1e-9, "the environment's fidelity disagrees with the SciPy replay"

    # A yardstick: the best single pulse for these evaluation tasks, from qfleet.control's
    # robust GRAPE (docs/control.md) on the same physics written as an OpenSystem. The agent,
    # which sees neither the rates nor the gradient, should come close to it.
    best = robust_grape(eval_tasks, n_steps, envs.qfleet_spec["segment_duration"], envs.qfleet_spec["max_amplitude"])
    print(f"robust GRAPE pulse on the same tasks: mean final fidelity {best:.4f} "
          f"(the agent reaches {trained_fid.mean() / best:.1%} of it)")

    # Did it learn?
    gain = trained_fid.mean().item() - random_fid.mean().item()
    if args.short:
        assert gain > 0.1, f"the agent did not improve on the random policy enough: {gain:+.3f}"
    else:
        assert gain > 0.3 and trained_fid.mean().item() > 0.9, \
            f"trained {trained_fid.mean():.4f} vs random {random_fid.mean():.4f}"
        assert trained_fid.mean().item() > best - 0.02, f"trained {trained_fid.mean():.4f} vs robust GRAPE {best:.4f}"
    envs.close()
    print("OK")


if __name__ == "__main__":
    main()
