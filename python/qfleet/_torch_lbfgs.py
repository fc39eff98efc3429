"""qfleet.control's "torch-lbfgs" method: torch.optim.LBFGS (strong-Wolfe line search) on one
problem, run as one step() (its state is built for that: stepping it an iteration at a time
restarts its curvature each time), with qfleet.control's stopping rules in the closure."""
import math
import time

import torch


class _Stop(Exception):
    pass


def run(problem, x0, target, gtol, ftol, max_evals, max_iterations, max_time, lr, memory):
    """Returns the summary ControlOptimizer.result() gives: (x, cost, evaluations, iterations,
    reasons, history, seconds)."""
    start = time.perf_counter()
    p = x0.clone().requires_grad_(True)
    max_iter = max_iterations if max_iterations is not None else 1 << 30
    # max_eval one above ours: the closure stops at max_evals itself, so the reason is known.
    opt = torch.optim.LBFGS([p], lr=lr, history_size=memory, max_iter=max_iter, max_eval=max_evals + 1,
                            tolerance_grad=gtol, tolerance_change=ftol, line_search_fn="strong_wolfe")
    history, best = [], [math.inf, x0.clone()]
    idx = torch.zeros(1, dtype=torch.int64)

    def closure():
        if len(history) >= max_evals:
            raise _Stop("evaluations")
        f, g = problem.value_and_grad(p.detach(), idx)
        p.grad = g.to(p.dtype)
        fv = float(f[0])
        history.append(fv)
        if fv < best[0]:
            best[0], best[1] = fv, p.detach().clone()
        if not (math.isfinite(fv) and torch.isfinite(g).all()):
            raise _Stop("not_finite")
        if target is not None and fv <= target:
            raise _Stop("target")
        if max_time is not None and time.perf_counter() - start >= max_time:
            raise _Stop("time")
        return f[0]

    try:
        opt.step(closure)
        state = opt.state[p]
        if p.grad is not None and float(p.grad.abs().max()) <= gtol:
            reason = "gradient"
        elif state.get("n_iter", 0) >= max_iter:
            reason = "iterations"
        else:
            reason = "converged"  # torch's tolerance_change (ftol) or a step of zero
    except _Stop as stop:
        reason = str(stop)
    iterations = int(opt.state[p].get("n_iter", 0))
    return (best[1], torch.tensor([best[0]], dtype=torch.float64), torch.tensor([len(history)]),
            torch.tensor([iterations]), [reason], [history], time.perf_counter() - start)
