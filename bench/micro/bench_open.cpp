// Open-system benchmarks (Google Benchmark). Run:
//   build/bench/bench_open --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Workloads from the meta-learning control code: a noisy qubit (d = 2, 60 segments,
// X and Y controls, T1 and dephasing rates per task, target X gate, loss 1 - F_avg),
// and its two-qubit CZ variant (d = 4, 30 segments, 6 controls); then scaling.
#include <benchmark/benchmark.h>

#include <cmath>
#include <complex>
#include <string>
#include <random>
#include <span>
#include <qfleet/qfleet.hpp>

namespace {

using qfleet::Complex;
using qfleet::ComplexMatrix;

ComplexMatrix kron(const ComplexMatrix& a, const ComplexMatrix& b, int da, int db) {
  const int d = da * db;
  ComplexMatrix m(std::size_t(d) * d);
  for (int i = 0; i < da; ++i)
    for (int j = 0; j < da; ++j)
      for (int k = 0; k < db; ++k)
        for (int l = 0; l < db; ++l) m[std::size_t(i * db + k) * d + (j * db + l)] = a[i * da + j] * b[k * db + l];
  return m;
}

const ComplexMatrix kI = {1, 0, 0, 1}, kX = {0, 1, 1, 0}, kY = {0, Complex(0, -1), Complex(0, 1), 0},
                    kZ = {1, 0, 0, -1}, kLower = {0, 1, 0, 0};

ComplexMatrix scaled(ComplexMatrix m, double s) {
  for (auto& z : m) z *= s;
  return m;
}

// Noisy qubits: per qubit X/2 and Y/2 controls, relaxation and dephasing jumps.
qfleet::OpenSystem noisy_qubits(int qubits, int n_seg, bool extra_couplings) {
  const int d = 1 << qubits;
  qfleet::OpenSystem s(d);
  auto on = [&](const ComplexMatrix& op, int q) {
    return qubits == 1 ? op : (q == 0 ? kron(op, kI, 2, 2) : kron(kI, op, 2, 2));
  };
  for (int q = 0; q < qubits; ++q) {
    s.control(scaled(on(kX, q), 0.5));
    s.control(scaled(on(kY, q), 0.5));
  }
  if (extra_couplings) {  // two-qubit variant: 6 controls
    s.control(scaled(kron(kX, kX, 2, 2), 0.5));
    s.control(scaled(kron(kZ, kZ, 2, 2), 0.5));
  }
  for (int q = 0; q < qubits; ++q) {
    s.jump(on(kLower, q));                   // relaxation, rate gamma_relax
    s.jump(scaled(on(kZ, q), std::sqrt(0.5)));  // dephasing sqrt(gamma/2) sigma_z
  }
  s.segments(n_seg, 1.0).propagate_gate();
  if (qubits == 1) {
    s.target_unitary(kX);
  } else {
    s.target_unitary({1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, -1});  // CZ
  }
  return s;
}

template <class R>
void run_open(benchmark::State& st, int qubits, int n_seg, bool couplings, bool gradient, qfleet::Solver solver,
              qfleet::Precision prec) {
  const std::size_t B = static_cast<std::size_t>(st.range(0));
  const auto sys = noisy_qubits(qubits, n_seg, couplings);
  qfleet::OpenCompileOptions o;
  o.solver = solver;
  o.precision = prec;
  o.dt = 0.01;
  const auto prog = qfleet::compile(sys, o);
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> amp(-4, 4), relax(0.01, 0.08), deph(0.02, 0.15);
  std::vector<R> u(B * n_seg * sys.n_controls()), rates(B * sys.n_jumps()), fid(B), cot(B, R(-1)), gu(u.size()),
      gr(rates.size());
  for (auto& v : u) v = R(amp(rng));
  for (std::size_t b = 0; b < B; ++b)
    for (int j = 0; j < sys.n_jumps(); ++j) rates[b * sys.n_jumps() + j] = R(j % 2 == 0 ? relax(rng) : deph(rng));
  const qfleet::TaskArgs<R> args{B, u, {}, rates, {}};
  qfleet::TaskOutputs<R> out;
  out.fidelity = fid;
  for (auto _ : st) {
    if (gradient) {
      prog.vjp(args, std::span<const R>(cot), {}, qfleet::TaskGradients<R>{gu, {}, gr}, out);
    } else {
      prog.forward(args, out);
    }
    benchmark::DoNotOptimize(fid.data());
  }
  st.counters["tasks/s"] = benchmark::Counter(double(B), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_MetaQubit_FwdGrad_c128(benchmark::State& st) {
  run_open<double>(st, 1, 60, false, true, qfleet::Solver::exact, qfleet::Precision::complex128);
}
void BM_MetaQubit_Fwd_c128(benchmark::State& st) {
  run_open<double>(st, 1, 60, false, false, qfleet::Solver::exact, qfleet::Precision::complex128);
}
void BM_TwoQubitCZ_FwdGrad_c128(benchmark::State& st) {
  run_open<double>(st, 2, 30, true, true, qfleet::Solver::exact, qfleet::Precision::complex128);
}
void BM_MetaQubit_FwdGrad_rk4_c128(benchmark::State& st) {
  run_open<double>(st, 1, 60, false, true, qfleet::Solver::rk4, qfleet::Precision::complex128);
}
void BM_MetaQubit_FwdGrad_c64(benchmark::State& st) {
  run_open<float>(st, 1, 60, false, true, qfleet::Solver::exact, qfleet::Precision::complex64);
}

BENCHMARK(BM_MetaQubit_FwdGrad_c128)->Arg(32)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_MetaQubit_Fwd_c128)->Arg(32)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_TwoQubitCZ_FwdGrad_c128)->Arg(32)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_MetaQubit_FwdGrad_rk4_c128)->Arg(32)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_MetaQubit_FwdGrad_c64)->Arg(32)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_MetaQubit_FwdGrad_c128)->Name("ScalingB/MetaQubit_FwdGrad_c128")
    ->RangeMultiplier(10)->Range(1, 100000)->Unit(benchmark::kMillisecond)->UseRealTime();

// A d-level system (state transfer |0> -> |d-1>): two controls (the real and
// imaginary parts of a ladder coupling), a lowering jump and dephasing, 32 tasks.
qfleet::OpenSystem ladder(int d, int n_seg) {
  qfleet::OpenSystem s(d);
  ComplexMatrix hx(std::size_t(d) * d), hy(hx.size()), low(hx.size()), deph(hx.size()), h0(hx.size());
  for (int i = 0; i + 1 < d; ++i) {
    const double g = std::sqrt(double(i + 1));
    hx[std::size_t(i) * d + i + 1] = hx[std::size_t(i + 1) * d + i] = g / 2;
    hy[std::size_t(i) * d + i + 1] = Complex(0, -g / 2);
    hy[std::size_t(i + 1) * d + i] = Complex(0, g / 2);
    low[std::size_t(i) * d + i + 1] = g;
  }
  for (int i = 0; i < d; ++i) {
    deph[std::size_t(i) * d + i] = double(i);
    h0[std::size_t(i) * d + i] = -0.1 * i * (i - 1);  // anharmonicity
  }
  qfleet::ComplexVector target(d);
  target[d - 1] = 1;
  s.drift(h0).control(hx).control(hy).jump(low).jump(deph).segments(n_seg, 2.0).target_state(target);
  return s;
}

// args: d, n_seg, solver (0 exact, 1 rk4, 2 euler, 3 dopri5), gradient (0/1)
void BM_Ladder(benchmark::State& st) {
  const int d = int(st.range(0)), n_seg = int(st.range(1));
  const auto solver = static_cast<qfleet::Solver>(st.range(2));
  const bool gradient = st.range(3) != 0;
  const std::size_t B = 32;
  qfleet::OpenCompileOptions o;
  o.solver = solver;
  o.dt = 0.01;
  o.rtol = 1e-8;
  o.atol = 1e-10;
  const auto prog = qfleet::compile(ladder(d, n_seg), o);
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> amp(-2, 2), rate(0.01, 0.1);
  std::vector<double> u(B * n_seg * 2), rates(B * 2), fid(B), cot(B, -1.0), gu(u.size()), gr(rates.size());
  for (auto& v : u) v = amp(rng);
  for (auto& v : rates) v = rate(rng);
  const qfleet::TaskArgs<double> args{B, u, {}, rates, {}};
  qfleet::TaskOutputs<double> out;
  out.fidelity = fid;
  for (auto _ : st) {
    if (gradient) {
      prog.vjp(args, std::span<const double>(cot), {}, qfleet::TaskGradients<double>{gu, {}, gr}, out);
    } else {
      prog.forward(args, out);
    }
    benchmark::DoNotOptimize(fid.data());
  }
  static const char* names[] = {"exact", "rk4", "euler", "dopri5", "tsit5"};
  st.SetLabel(std::string(names[st.range(2)]) + (gradient ? " fwd+grad" : " fwd"));
}
void ladder_args(benchmark::internal::Benchmark* b) {
  for (int g : {0, 1}) {
    for (int solver : {0, 1, 2, 3}) {
      for (int d : {2, 4, 8, 16, 32}) {
        if (solver == 0 && d > 16) continue;  // beyond the exact solver's limit
        b->Args({d, 60, solver, g});
      }
      for (int n_seg : {10, 100, 1000}) b->Args({2, n_seg, solver, g});
    }
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}
BENCHMARK(BM_Ladder)->Apply(ladder_args);

// Expectation values along the pulse, as system identification fits them: the forward
// pass with <O> at every segment boundary, against one reverse sweep with a cotangent on
// every one of them (the forward outputs in the same pass), for B tasks with their own
// pulses and rates. d = 2: the noisy qubit from |0>, 60 segments, <X>, <Y>, <Z>;
// d = 16: the ladder from |0>, 12 segments, the level populations' mean <n>.
// args: d, B, mode: 0 forward; 1 fused forward + gradient (vjp); 2 the backward call
// alone from a forward's saved states (vjp_saved: what autograd's backward runs).
void BM_Expvals(benchmark::State& st) {
  const int d = int(st.range(0));
  const std::size_t B = std::size_t(st.range(1));
  const int mode = int(st.range(2));
  qfleet::OpenSystem sys = d == 2 ? qfleet::OpenSystem(2) : ladder(d, 12);
  if (d == 2) {
    sys.control(scaled(kX, 0.5)).control(scaled(kY, 0.5)).jump(kLower).jump(scaled(kZ, std::sqrt(0.5)));
    sys.segments(60, 1.0).observable(kX).observable(kY).observable(kZ);
  } else {
    ComplexMatrix n_op(std::size_t(d) * d);
    for (int i = 0; i < d; ++i) n_op[std::size_t(i) * d + i] = double(i);
    sys.observable(n_op);
  }
  const auto prog = qfleet::compile(sys);
  const int n_seg = sys.n_segments(), K = sys.n_observables();
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> amp(-2, 2), rate(0.01, 0.1), cot(-1, 1);
  std::vector<double> u(B * n_seg * 2), rates(B * 2), ex(B * (n_seg + 1) * K), cex(ex.size()), gu(u.size()),
      gr(rates.size());
  for (auto& v : u) v = amp(rng);
  for (auto& v : rates) v = rate(rng);
  for (auto& v : cex) v = cot(rng);
  const qfleet::TaskArgs<double> args{B, u, {}, rates, {}};
  qfleet::TaskOutputs<double> out;
  out.expvals = ex;
  const qfleet::TaskCotangents<double> cots{{}, {}, cex, {}};
  const qfleet::TaskGradients<double> grads{gu, {}, gr};
  std::vector<double> saved(mode == 2 ? prog.saved_size(B) : 0);
  if (mode == 2) prog.forward(args, out, std::span<double>(saved));
  for (auto _ : st) {
    if (mode == 1) {
      prog.vjp(args, cots, grads, out);
    } else if (mode == 2) {
      prog.vjp_saved(args, std::span<const double>(saved), cots, grads);
    } else {
      prog.forward(args, out);
    }
    benchmark::DoNotOptimize(ex.data());
    benchmark::DoNotOptimize(gu.data());
  }
  static const char* const kModes[] = {" fwd", " fwd+grad", " backward from saved"};
  st.SetLabel(std::string(qfleet::to_string(prog.exact_method())) + kModes[mode]);
}
BENCHMARK(BM_Expvals)->ArgsProduct({{2, 16}, {32, 1024}, {0, 1, 2}})->Unit(benchmark::kMillisecond)->UseRealTime();

// The local-qubits workload: n qubits with local terms (frequencies and a ZZ chain in
// H0, X and Y drives on every qubit, relaxation and dephasing on every qubit), state
// transfer |0...0> -> |1...1>, 32 tasks, 60 segments over T = 2, forward + gradient.
ComplexMatrix on_qubit(const ComplexMatrix& op, int q, int qubits) {
  ComplexMatrix m = {1};
  int dm = 1;
  for (int i = 0; i < qubits; ++i) {
    m = kron(m, i == q ? op : kI, dm, 2);
    dm *= 2;
  }
  return m;
}

qfleet::OpenSystem local_qubits(int qubits, int n_seg) {
  const int d = 1 << qubits;
  qfleet::OpenSystem s(d);
  ComplexMatrix h0(std::size_t(d) * d);
  for (int q = 0; q < qubits; ++q) {
    const ComplexMatrix z = on_qubit(kZ, q, qubits);
    for (std::size_t i = 0; i < h0.size(); ++i) h0[i] += (0.3 + 0.1 * q) * z[i];
    if (q + 1 < qubits) {
      const ComplexMatrix z2 = on_qubit(kZ, q + 1, qubits);
      for (int i = 0; i < d; ++i) h0[std::size_t(i) * d + i] += 0.05 * z[std::size_t(i) * d + i] * z2[std::size_t(i) * d + i];
    }
  }
  s.drift(h0);
  for (int q = 0; q < qubits; ++q) {
    s.control(scaled(on_qubit(kX, q, qubits), 0.5));
    s.control(scaled(on_qubit(kY, q, qubits), 0.5));
  }
  for (int q = 0; q < qubits; ++q) {
    s.jump(on_qubit(kLower, q, qubits));
    s.jump(scaled(on_qubit(kZ, q, qubits), std::sqrt(0.5)));
  }
  qfleet::ComplexVector psi0(d), target(d);
  psi0[0] = 1;
  target[d - 1] = 1;
  s.segments(n_seg, 2.0).initial_state(psi0).target_state(target);
  return s;
}

// Times forward + gradient of `prog` on 32 tasks of random pulses in [-2, 2] and local
// rates (relaxation in [0.01, 0.05], dephasing in [0.02, 0.1], alternating as local_qubits
// adds its jumps), the same draws for every program of one system size.
void time_local_vjp(benchmark::State& st, const qfleet::OpenProgram& prog, const qfleet::OpenSystem& sys, int n_seg) {
  const std::size_t B = 32;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> amp(-2, 2), relax(0.01, 0.05), deph(0.02, 0.1);
  std::vector<double> u(B * n_seg * sys.n_controls()), rates(B * sys.n_jumps()), fid(B), cot(B, -1.0), gu(u.size()),
      gr(rates.size());
  for (auto& v : u) v = amp(rng);
  for (std::size_t b = 0; b < B; ++b)
    for (int j = 0; j < sys.n_jumps(); ++j) rates[b * sys.n_jumps() + j] = j % 2 == 0 ? relax(rng) : deph(rng);
  const qfleet::TaskArgs<double> args{B, u, {}, rates, {}};
  qfleet::TaskOutputs<double> out;
  out.fidelity = fid;
  for (auto _ : st) {
    prog.vjp(args, std::span<const double>(cot), {}, qfleet::TaskGradients<double>{gu, {}, gr}, out);
    benchmark::DoNotOptimize(fid.data());
  }
}

// args: qubits, solver (0 exact, 1 rk4 dt = 0.01, 3 dopri5, 4 tsit5; rtol 1e-6, atol 1e-8),
// form (0 automatic, 1 superoperator, 2 lindblad; exact: 1 its propagator, 2 its action
// in Lindblad form)
void BM_LocalQubits(benchmark::State& st) {
  const int qubits = int(st.range(0)), n_seg = 60;
  const auto sys = local_qubits(qubits, n_seg);
  qfleet::OpenCompileOptions o;
  o.solver = static_cast<qfleet::Solver>(st.range(1));
  o.form = static_cast<qfleet::OpenForm>(st.range(2));
  if (o.solver == qfleet::Solver::exact && st.range(2) > 0) {
    o.exact = st.range(2) == 1 ? qfleet::ExactMethod::propagator : qfleet::ExactMethod::action;
  }
  o.dt = 0.01;
  o.rtol = 1e-6;
  o.atol = 1e-8;
  const auto prog = qfleet::compile(sys, o);
  time_local_vjp(st, prog, sys, n_seg);
  static const char* solvers[] = {"exact", "rk4", "euler", "dopri5", "tsit5"};
  std::string label = "d=" + std::to_string(1 << qubits) + " " + solvers[st.range(1)];
  if (prog.exact_method() != qfleet::ExactMethod::automatic) {
    label += ' ';
    label += qfleet::to_string(prog.exact_method());
  }
  label += prog.form() == qfleet::OpenForm::lindblad ? " lindblad fwd+grad" : " superoperator fwd+grad";
  st.SetLabel(label);
}
void local_qubit_args(benchmark::internal::Benchmark* b) {
  for (int qubits : {1, 2, 3, 4, 5, 6}) {
    for (int solver : {0, 1, 3, 4}) {
      for (int form : {1, 2}) {
        if (form == 1 && qubits > 4) continue;  // the superoperator: 1 GiB per generator at d = 64
        if (solver == 0 && form == 1 && qubits > 3) continue;  // the propagator: 45 s at d = 16
        b->Args({qubits, solver, form});
      }
    }
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}
BENCHMARK(BM_LocalQubits)->Apply(local_qubit_args);

// Gate problems by the exact solver: the same local qubits without the
// initial state, the propagator of every basis column (propagate_gate, target X on
// every qubit; with the jumps, or closed: no jumps), the exact solver's propagator
// against its action on the basis columns, and the automatic choice beside them.
// args: qubits, method (0 automatic, 1 propagator, 2 action), open (0 closed, 1 open)
void BM_LocalQubitsGate(benchmark::State& st) {
  const int qubits = int(st.range(0)), n_seg = 60, d = 1 << qubits;
  const bool open = st.range(2) != 0;
  const qfleet::OpenSystem local = local_qubits(qubits, n_seg);
  qfleet::OpenSystem sys(d);
  sys.drift(local.h0());
  for (const auto& h : local.controls()) sys.control(h);
  if (open)
    for (const auto& l : local.jumps()) sys.jump(l);
  ComplexMatrix x_all = {1};
  for (int q = 0, dm = 1; q < qubits; ++q, dm *= 2) x_all = kron(x_all, kX, dm, 2);
  sys.segments(n_seg, 2.0).propagate_gate().target_unitary(x_all);
  qfleet::OpenCompileOptions o;
  o.solver = qfleet::Solver::exact;
  o.exact = static_cast<qfleet::ExactMethod>(st.range(1));
  const auto prog = qfleet::compile(sys, o);
  time_local_vjp(st, prog, sys, n_seg);
  std::string label = "d=" + std::to_string(d) + (open ? " open" : " closed") + " gate, " +
                      (st.range(1) == 0 ? "automatic -> " : "") + std::string(qfleet::to_string(prog.exact_method()));
  st.SetLabel(label + " fwd+grad");
}
void local_gate_args(benchmark::internal::Benchmark* b) {
  for (int open : {0, 1}) {
    for (int qubits : {1, 2, 3, 4, 5, 6}) {
      if (open && qubits > 3) continue;  // an open gate problem at d = 16 propagates 256 columns of 256
      for (int method : {0, 1, 2}) b->Args({qubits, method, open});
    }
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}
BENCHMARK(BM_LocalQubitsGate)->Apply(local_gate_args);

}  // namespace

BENCHMARK_MAIN();
