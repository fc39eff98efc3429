// A warm Program or OpenProgram allocates nothing in forward() or vjp(): every heap allocation in
// this binary is counted by a replaced global operator new.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

#include <qfleet/qfleet.hpp>

namespace {
std::atomic<long> g_allocations{0};
}

void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

int main() {
  using namespace qfleet;
  int failures = 0;
  for (int n : {4, 14}) {
    Circuit c(n);
    std::vector<int> wires;
    for (int i = 0; i < n; ++i) wires.push_back(i);
    c.angle_embedding(wires).strongly_entangling_layers(wires, 2).expval("Z0").probs({0, 1});
    for (int threads : {1, 2}) {
      CompileOptions opt;
      opt.num_threads = threads;
      const Program prog = compile(c, opt);
      for (std::size_t B : {std::size_t{1}, std::size_t{5}, std::size_t{64}}) {
        std::vector<double> x(B * prog.n_inputs(), 0.3), w(prog.n_weights(), 0.1), out(B * prog.n_outputs()),
            cot(out.size(), 1.0), gx(x.size()), gw(w.size());
        const BatchArgs<double> args{B, x, w};
        for (int warm = 0; warm < 2; ++warm) {  // grow the workspace, start OpenMP's pool
          prog.forward(args, std::span<double>(out));
          prog.vjp(args, std::span<const double>(cot), Gradients<double>{gx, gw}, std::span<double>(out));
        }
        const long before = g_allocations.load();
        for (int rep = 0; rep < 5; ++rep) {
          prog.forward(args, std::span<double>(out));
          prog.vjp(args, std::span<const double>(cot), Gradients<double>{gx, gw}, std::span<double>(out));
        }
        const long made = g_allocations.load() - before;
        std::printf("n=%d threads=%d B=%zu: %ld allocations in 5 warm forward+vjp calls\n", n, threads, B, made);
        if (made != 0) ++failures;
      }
    }
  }
  // Open systems: every solver, a gate problem with per-task pulses and rates.
  for (Solver solver : {Solver::exact, Solver::rk4, Solver::euler, Solver::dopri5}) {
    OpenSystem s(2);
    s.control({0, 0.5, 0.5, 0}).control({0, Complex(0, -0.5), Complex(0, 0.5), 0}).jump({0, 1, 0, 0});
    s.segments(6, 1.0).propagate_gate().target_unitary({0, 1, 1, 0});
    OpenCompileOptions o;
    o.solver = solver;
    o.dt = 0.05;
    const OpenProgram prog = compile(s, o);
    const std::size_t B = 5;
    std::vector<double> u(B * 6 * 2, 0.4), rates(B, 0.05), fid(B), cot(B, -1.0), gu(u.size()), gr(rates.size());
    std::vector<double> saved(prog.saved_size(B));
    const TaskArgs<double> args{B, u, {}, rates, {}};
    TaskOutputs<double> out;
    out.fidelity = fid;
    for (int warm = 0; warm < 2; ++warm) {  // both calls: forward may use more threads than vjp's tasks
      prog.forward(args, out);
      prog.vjp(args, std::span<const double>(cot), {}, TaskGradients<double>{gu, {}, gr}, out);
      prog.forward(args, out, std::span<double>(saved));  // the saved-state pair (autograd's calls)
      prog.vjp_saved(args, std::span<const double>(saved), std::span<const double>(cot), {},
                     TaskGradients<double>{gu, {}, gr});
    }
    const long before = g_allocations.load();
    for (int rep = 0; rep < 5; ++rep) {
      prog.forward(args, out);
      prog.vjp(args, std::span<const double>(cot), {}, TaskGradients<double>{gu, {}, gr}, out);
      prog.forward(args, out, std::span<double>(saved));  // the saved-state pair (autograd's calls)
      prog.vjp_saved(args, std::span<const double>(saved), std::span<const double>(cot), {},
                     TaskGradients<double>{gu, {}, gr});
    }
    const long made = g_allocations.load() - before;
    std::printf("open system, solver %d: %ld allocations in 5 warm forward+vjp (fused and saved) calls\n",
                int(solver), made);
    if (made != 0) ++failures;
  }
  std::printf(failures ? "FAIL: a warm program allocated\n" : "ok: warm programs allocate nothing\n");
  return failures ? 1 : 0;
}
