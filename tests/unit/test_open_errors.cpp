// Bad input to the open-system engine: every rejected call throws qfleet::Error
// whose message names the problem, and nothing is lost (a rejected builder call
// leaves the system as it was; a rejected forward/vjp leaves every output buffer
// untouched, and the program still works afterwards).
#include <gtest/gtest.h>

#include <limits>

#include "unit/expect_error.hpp"
#include "unit/open_harness.hpp"

namespace {

using namespace ref;
using qfleet::Solver;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Everything a builder call could change.
struct Snapshot {
  int dim;
  qfleet::ComplexMatrix h0, rho0, target;
  qfleet::ComplexVector psi0, target_psi;
  std::vector<qfleet::ComplexMatrix> drift_terms, controls, jumps, observables;
  std::vector<double> durations;
  qfleet::OpenSystem::Initial init;
  qfleet::OpenSystem::Target tk;
  std::vector<int> subspace;
  explicit Snapshot(const qfleet::OpenSystem& s)
      : dim(s.dim()), h0(s.h0()), rho0(s.initial_density_matrix()), target(s.target_matrix()),
        psi0(s.initial_pure_state()), target_psi(s.target_pure_state()), drift_terms(s.drift_terms()),
        controls(s.controls()), jumps(s.jumps()), observables(s.observables()), durations(s.segment_durations()),
        init(s.initial_kind()), tk(s.target_kind()), subspace(s.subspace()) {}
  bool operator==(const Snapshot&) const = default;
};

qfleet::ComplexMatrix with(qfleet::ComplexMatrix m, std::size_t i, cd v) {
  m[i] = v;
  return m;
}

TEST(OpenErrors, BuilderRejectsBadMatricesAndLeavesTheSystemUnchanged) {
  EXPECT_QFLEET_ERROR(qfleet::OpenSystem(0), "dimension");
  EXPECT_QFLEET_ERROR(qfleet::OpenSystem(100000), "dimension");

  std::mt19937_64 rng(401);
  qfleet::OpenSystem s(2);
  s.drift(row_major(pauli('Z'))).drift_term(row_major(pauli('X'))).control(row_major(pauli('Y'))).jump(row_major(ket_bra(2, 0, 1)));
  s.observable(row_major(pauli('Z'))).segments(4, 1.0).initial_state(stdvec(basis(2, 1))).target_state(stdvec(basis(2, 0)));
  s.computational_subspace({0});
  const Snapshot before(s);
  const qfleet::ComplexMatrix nonherm = row_major(mat2(1, 2, 0, 1));
  const qfleet::ComplexMatrix herm = row_major(pauli('X'));

  EXPECT_QFLEET_ERROR(s.drift(nonherm), "drift", "hermitian");
  EXPECT_QFLEET_ERROR(s.drift_term(nonherm), "drift term", "hermitian");
  EXPECT_QFLEET_ERROR(s.control(nonherm), "control", "hermitian");
  EXPECT_QFLEET_ERROR(s.observable(row_major(mat2(0, kI, kI, 0))), "observable", "hermitian");
  EXPECT_QFLEET_ERROR(s.drift(row_major(mat2(1, 0, 0, cd(1, 1e-3)))), "hermitian");  // complex diagonal
  for (cd bad : {cd(kNaN, 0), cd(0, kInf), cd(-kInf, 0)}) {
    EXPECT_QFLEET_ERROR(s.drift(with(herm, 0, bad)), "non-finite");
    EXPECT_QFLEET_ERROR(s.drift_term(with(herm, 3, bad)), "non-finite");
    EXPECT_QFLEET_ERROR(s.control(with(herm, 1, bad)), "non-finite");
    EXPECT_QFLEET_ERROR(s.jump(with(herm, 2, bad)), "non-finite");
    EXPECT_QFLEET_ERROR(s.observable(with(herm, 0, bad)), "non-finite");
    EXPECT_QFLEET_ERROR(s.initial_state({bad, 1}), "non-finite");
    EXPECT_QFLEET_ERROR(s.target_state({1, bad}), "non-finite");
    EXPECT_QFLEET_ERROR(s.initial_density(with(row_major(eye(2) / 2.0), 0, bad)), "non-finite");
    EXPECT_QFLEET_ERROR(s.target_unitary(with(herm, 1, bad)), "non-finite");
  }
  // Wrong sizes.
  EXPECT_QFLEET_ERROR(s.drift(row_major(eye(3))), "2x2");
  EXPECT_QFLEET_ERROR(s.control(qfleet::ComplexMatrix(3, 0.0)), "2x2");
  EXPECT_QFLEET_ERROR(s.jump(row_major(eye(1))), "2x2");
  EXPECT_QFLEET_ERROR(s.observable({}), "2x2");
  EXPECT_QFLEET_ERROR(s.initial_state({1, 0, 0}), "2 amplitudes");
  EXPECT_QFLEET_ERROR(s.target_state({1}), "2 amplitudes");
  // States and densities.
  EXPECT_QFLEET_ERROR(s.initial_state({1, 1}), "normalised");
  EXPECT_QFLEET_ERROR(s.target_state({0.5, 0.5}), "normalised");
  EXPECT_QFLEET_ERROR(s.initial_density(row_major(eye(2))), "trace 1");
  EXPECT_QFLEET_ERROR(s.initial_density(row_major(mat2(0.5, 0.1, 0.2, 0.5))), "hermitian");
  EXPECT_QFLEET_ERROR(s.target_density(row_major(0.3 * eye(2))), "trace 1");
  EXPECT_QFLEET_ERROR(s.target_unitary(row_major(mat2(1, 1, 0, 1))), "unitary");
  // Time grid and subspace.
  EXPECT_QFLEET_ERROR(s.segments(0, 1.0), "n_seg");
  EXPECT_QFLEET_ERROR(s.segments(-3, 1.0), "n_seg");
  EXPECT_QFLEET_ERROR(s.segments(3, 0.0), "total time");
  EXPECT_QFLEET_ERROR(s.segments(3, -1.0), "total time");
  EXPECT_QFLEET_ERROR(s.segments(3, kNaN), "total time");
  EXPECT_QFLEET_ERROR(s.segments(3, kInf), "total time");
  EXPECT_QFLEET_ERROR(s.durations({}), "durations");
  EXPECT_QFLEET_ERROR(s.durations({0.1, 0.0}), "segment 1", "> 0");
  EXPECT_QFLEET_ERROR(s.durations({-0.1, 0.2}), "segment 0", "> 0");
  EXPECT_QFLEET_ERROR(s.durations({0.1, kNaN}), "finite");
  EXPECT_QFLEET_ERROR(s.computational_subspace({}), "at least one");
  EXPECT_QFLEET_ERROR(s.computational_subspace({0, 2}), "out of range");
  EXPECT_QFLEET_ERROR(s.computational_subspace({-1}), "out of range");
  EXPECT_QFLEET_ERROR(s.computational_subspace({1, 1}), "repeated");

  EXPECT_TRUE(Snapshot(s) == before) << "a rejected builder call changed the system";
  // And the system still compiles and runs.
  Model m(2);
  m.h0 = pauli('Z');
  m.drift_terms = {pauli('X')};
  m.controls = {pauli('Y')};
  m.jumps = {ket_bra(2, 0, 1)};
  m.observables = {pauli('Z')};
  m.durations.assign(4, 0.25);
  m.psi0 = basis(2, 1);
  m.target = Target::Pure;
  m.target_psi = basis(2, 0);
  m.subspace = {0};
  const auto prog = qfleet::compile(s);
  TaskBatch b;
  b.amps = {0.1, 0.2, 0.3, 0.4};
  b.drift = {0.5};
  b.rates = {0.3};
  expect_outputs(qforward<double>(prog, m, b, want_all(m)), simulate_batch(m, b), want_all(m), 1e-10, 0,
                 "after rejected builder calls");
}

TEST(OpenErrors, CompileRejectsInconsistentProblems) {
  auto qubit = [] {
    qfleet::OpenSystem s(2);
    s.control(row_major(pauli('X')));
    return s;
  };
  EXPECT_QFLEET_ERROR(qfleet::compile(qubit()), "no time grid");
  {
    auto s = qubit();
    s.segments(2, 1.0).target_unitary(row_major(pauli('X')));
    EXPECT_QFLEET_ERROR(qfleet::compile(s), "propagate_gate");
  }
  {
    auto s = qubit();
    s.segments(2, 1.0).propagate_gate().target_state({1, 0});
    EXPECT_QFLEET_ERROR(qfleet::compile(s), "target unitary");
  }
  {
    auto s = qubit();
    s.segments(2, 1.0).propagate_gate().observable(row_major(pauli('Z')));
    EXPECT_QFLEET_ERROR(qfleet::compile(s), "observable");
  }
  {
    auto s = qubit();  // closed system with a density matrix
    s.segments(2, 1.0).initial_density(row_major(eye(2) / 2.0));
    EXPECT_QFLEET_ERROR(qfleet::compile(s), "pure state");
  }
  {
    auto s = qubit();  // Hermitian, trace 1, not PSD
    s.segments(2, 1.0).jump(row_major(ket_bra(2, 0, 1))).initial_density(row_major(mat2(1.5, 0, 0, -0.5)));
    EXPECT_QFLEET_ERROR(qfleet::compile(s), "initial density", "positive semidefinite");
  }
  {
    auto s = qubit();
    s.segments(2, 1.0).jump(row_major(ket_bra(2, 0, 1))).target_density(row_major(mat2(0.5, 0.9, 0.9, 0.5)));
    EXPECT_QFLEET_ERROR(qfleet::compile(s), "target density", "positive semidefinite");
    qfleet::OpenSystem c = qubit();
    c.segments(2, 1.0).target_density(row_major(mat2(0.5, 0.9, 0.9, 0.5)));
    EXPECT_QFLEET_ERROR(qfleet::compile(c), "target density", "positive semidefinite");
  }
  // Solver options.
  auto grid = qubit();
  grid.segments(2, 1.0);
  qfleet::OpenCompileOptions o;
  o.solver = Solver::rk4;
  EXPECT_QFLEET_ERROR(qfleet::compile(grid, o), "rk4", "dt");
  o.dt = -0.1;
  EXPECT_QFLEET_ERROR(qfleet::compile(grid, o), "rk4", "dt");
  o.solver = Solver::euler;
  o.dt = 0;
  EXPECT_QFLEET_ERROR(qfleet::compile(grid, o), "euler", "dt");
  o.dt = kNaN;
  EXPECT_QFLEET_ERROR(qfleet::compile(grid, o), "euler", "dt");
  o = {};
  o.solver = Solver::dopri5;
  o.rtol = 0;
  EXPECT_QFLEET_ERROR(qfleet::compile(grid, o), "dopri5", "rtol");
  o.rtol = 1e-8;
  o.atol = -1;
  EXPECT_QFLEET_ERROR(qfleet::compile(grid, o), "dopri5", "atol");
  o = {};
  o.num_threads = -1;
  EXPECT_QFLEET_ERROR(qfleet::compile(grid, o), "num_threads");
  // The exact solver's propagator's size limit: an open d = 17 system has a 289 x 289
  // generator. The action (automatic there) has none.
  qfleet::OpenSystem big(17);
  big.segments(2, 1.0).jump(row_major(ket_bra(17, 0, 1)));
  o = {};
  o.exact = qfleet::ExactMethod::propagator;
  EXPECT_QFLEET_ERROR(qfleet::compile(big, o), "propagator", "289x289", "exact: action", "rk4", "dopri5");
  EXPECT_EQ(qfleet::compile(big).exact_method(), qfleet::ExactMethod::action);
  o = {};
  o.solver = Solver::rk4;
  o.dt = 0.1;
  EXPECT_NO_THROW(qfleet::compile(big, o));
  o.solver = Solver::dopri5;
  EXPECT_NO_THROW(qfleet::compile(big, o));
  qfleet::OpenSystem big_closed(17);  // closed: a 17 x 17 generator is fine
  big_closed.segments(2, 1.0);
  EXPECT_NO_THROW(qfleet::compile(big_closed));
  qfleet::OpenSystem limit(16);
  limit.segments(1, 1.0).jump(row_major(ket_bra(16, 0, 1)));
  EXPECT_NO_THROW(qfleet::compile(limit));
}

// A small open problem with everything measurable, for the call-time checks.
struct Fixture {
  Model m{2};
  qfleet::OpenProgram prog;
  TaskBatch b;
  static Model model(bool closed) {
    Model m(2);
    m.h0 = 0.3 * pauli('Z');
    m.drift_terms = {pauli('X')};
    m.controls = {pauli('Y'), pauli('X')};
    if (!closed) m.jumps = {ket_bra(2, 0, 1)};
    m.observables = {pauli('Z')};
    m.durations = {0.3, 0.2, 0.4};
    m.target = Target::Pure;
    m.target_psi = basis(2, 1);
    m.subspace = {0};
    return m;
  }
  explicit Fixture(bool closed = false, qfleet::Precision p = qfleet::Precision::complex128)
      : m(model(closed)), prog(qfleet::compile(build(m), [p] {
          qfleet::OpenCompileOptions o;
          o.precision = p;
          return o;
        }())) {
    b.B = 2;
    b.amp_pt = true;
    b.amps = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, -0.1, -0.2, -0.3, -0.4, -0.5, -0.6};
    b.drift = {0.7};
    b.rates = closed ? std::vector<double>{} : std::vector<double>{0.2};
  }
};

// Runs a call that must be rejected on sentinel-filled, correctly sized outputs and
// gradients, and checks that none of them was written.
template <class Call>
void expect_rejected_untouched(const Fixture& f, Call call, std::initializer_list<const char*> fragments) {
  QOut<double> o;
  o.size(f.m, f.b.B, want_all(f.m));
  std::vector<double> ga(f.b.amps.size(), -7), gd(f.b.drift.size(), -7), gr(f.b.rates.size(), -7);
  const std::string msg = qfleet_test::lower(qfleet_test::error_of([&] { call(o, ga, gd, gr); }));
  for (const char* frag : fragments)
    EXPECT_NE(msg.find(qfleet_test::lower(frag)), std::string::npos) << "message: " << msg << "\nshould mention: " << frag;
  for (double v : o.fid) EXPECT_EQ(v, -7);
  for (double v : o.leak) EXPECT_EQ(v, -7);
  for (double v : o.exp) EXPECT_EQ(v, -7);
  for (auto z : o.fin) EXPECT_EQ(z, std::complex<double>(-7, -7));
  for (const auto* g : {&ga, &gd, &gr})
    for (double v : *g) EXPECT_EQ(v, -7);
}

qfleet::TaskGradients<double> grads(std::vector<double>& ga, std::vector<double>& gd, std::vector<double>& gr) {
  qfleet::TaskGradients<double> g;
  g.amplitudes = ga;
  g.drift_coeffs = gd;
  g.rates = gr;
  return g;
}

// Forward and vjp with modified arguments: each must be rejected with outputs untouched.
template <class Mutate>
void expect_bad_args(const Fixture& f, Mutate mutate, std::initializer_list<const char*> fragments) {
  const std::vector<double> cot = {1.0, 1.0};
  expect_rejected_untouched(f, [&](QOut<double>& o, auto&, auto&, auto&) {
    TaskBatch bb = f.b;
    QArgs<double> a(bb);
    qfleet::TaskArgs<double> args = a.args();
    mutate(a, args);
    f.prog.forward<double>(args, o.outputs());
  }, fragments);
  expect_rejected_untouched(f, [&](QOut<double>& o, auto& ga, auto& gd, auto& gr) {
    TaskBatch bb = f.b;
    QArgs<double> a(bb);
    qfleet::TaskArgs<double> args = a.args();
    mutate(a, args);
    f.prog.vjp<double>(args, cot, cot, grads(ga, gd, gr), o.outputs());
  }, fragments);
}

TEST(OpenErrors, CallRejectsBadArgumentsAndTouchesNoOutput) {
  const Fixture f;
  using A = QArgs<double>;
  using T = qfleet::TaskArgs<double>;
  expect_bad_args(f, [](A& a, T& t) { t.amplitudes = std::span<const double>(a.amps).first(5); }, {"amplitudes", "12"});
  expect_bad_args(f, [](A& a, T& t) { t.amplitudes = std::span<const double>(a.amps).first(0); }, {"amplitudes"});
  expect_bad_args(f, [](A&, T& t) { t.drift_coeffs = {}; }, {"drift_coeffs"});
  expect_bad_args(f, [](A& a, T& t) { a.drift = {0.1, 0.2, 0.3}; t.drift_coeffs = a.drift; }, {"drift_coeffs"});
  expect_bad_args(f, [](A& a, T& t) { a.rates = {0.1, 0.2, 0.3}; t.rates = a.rates; }, {"rates"});
  expect_bad_args(f, [](A&, T& t) { t.rates = {}; }, {"rates"});
  expect_bad_args(f, [](A& a, T&) { a.rates[0] = -0.01; }, {"rates", ">= 0"});
  expect_bad_args(f, [](A& a, T&) { a.amps[3] = kNaN; }, {"amplitudes", "non-finite"});
  expect_bad_args(f, [](A& a, T&) { a.amps[11] = -kInf; }, {"amplitudes", "non-finite"});
  expect_bad_args(f, [](A& a, T&) { a.drift[0] = kInf; }, {"drift_coeffs", "non-finite"});
  expect_bad_args(f, [](A& a, T&) { a.rates[0] = kNaN; }, {"rates", "non-finite"});
  expect_bad_args(f, [](A&, T& t) { t.batch = 0; }, {"batch"});
  expect_bad_args(f, [](A&, T& t) { t.batch = 3; }, {"amplitudes"});
  // Per-task initial density matrices.
  auto set_initial = [](std::vector<cd> v) {
    return [v](A& a, T& t) {
      a.initial = v;
      t.initial = a.initial;
    };
  };
  const std::vector<cd> good = {0.5, 0, 0, 0.5, 1, 0, 0, 0};
  expect_bad_args(f, set_initial({0.5, 0, 0, 0.5}), {"initial", "8"});
  expect_bad_args(f, set_initial({0.5, 0, 0, 0.5, 1, 0, 0, 1}), {"task 1", "trace 1"});
  expect_bad_args(f, set_initial({1.5, 0, 0, -0.5, 1, 0, 0, 0}), {"task 0", "positive semidefinite"});
  expect_bad_args(f, set_initial({0.5, 0.3, 0, 0.5, 1, 0, 0, 0}), {"task 0", "hermitian"});
  expect_bad_args(f, set_initial({0.5, 0, 0, 0.5, 1, cd(kNaN, 0), 0, 0}), {"task 1", "non-finite"});
  // Per-task pure states of a closed system.
  const Fixture fc(true);
  expect_bad_args(fc, set_initial({1, 0, 0.6, 0.6}), {"task 1", "normalised"});
  expect_bad_args(fc, set_initial({1, 0, 1}), {"initial"});
  expect_bad_args(fc, set_initial({1, 0, cd(0, kInf), 0}), {"task 1", "non-finite"});
  // A good per-task initial is accepted (and the fixture runs).
  TaskBatch b = f.b;
  b.initial = good;
  const auto q = qforward<double>(f.prog, f.m, b, want_all(f.m));
  expect_outputs(q, simulate_batch(f.m, b), want_all(f.m), 1e-10, 0, "after rejected calls");
}

TEST(OpenErrors, CallRejectsBadOutputsGradientsAndPrecision) {
  const Fixture f;
  const QArgs<double> a(f.b);
  const std::vector<double> cot = {1.0, 1.0};
  auto fwd = [&](auto mutate, std::initializer_list<const char*> frags) {
    expect_rejected_untouched(f, [&](QOut<double>& o, auto&, auto&, auto&) {
      qfleet::TaskOutputs<double> out = o.outputs();
      mutate(out);
      f.prog.forward<double>(a.args(), out);
    }, frags);
  };
  using O = qfleet::TaskOutputs<double>;
  fwd([](O& o) { o.fidelity = o.fidelity.first(1); }, {"fidelity", "[batch]"});
  fwd([](O& o) { o.leakage = o.leakage.first(1); }, {"leakage"});
  fwd([](O& o) { o.expvals = o.expvals.first(7); }, {"expvals"});
  fwd([](O& o) { o.final_state = o.final_state.first(3); }, {"final_state"});
  // Requests the problem cannot answer.
  Model bare = f.m;
  bare.target = Target::None;
  bare.subspace.clear();
  bare.observables.clear();
  const auto pb = qfleet::compile(build(bare));
  std::vector<double> two(2, -7), many(8, -7);
  O o1;
  o1.fidelity = two;
  EXPECT_QFLEET_ERROR(pb.forward<double>(a.args(), o1), "fidelity", "target");
  O o2;
  o2.leakage = two;
  EXPECT_QFLEET_ERROR(pb.forward<double>(a.args(), o2), "leakage", "subspace");
  O o3;
  o3.expvals = many;
  EXPECT_QFLEET_ERROR(pb.forward<double>(a.args(), o3), "observable");
  EXPECT_QFLEET_ERROR(pb.vjp<double>(a.args(), cot, {}, {}), "target");
  EXPECT_QFLEET_ERROR(pb.vjp<double>(a.args(), {}, cot, {}), "subspace");
  for (double v : two) EXPECT_EQ(v, -7);
  for (double v : many) EXPECT_EQ(v, -7);

  // Gradients and cotangents.
  auto bwd = [&](std::vector<double> cf, std::vector<double> cl, auto mutate,
                 std::initializer_list<const char*> frags) {
    expect_rejected_untouched(f, [&](QOut<double>& o, auto& ga, auto& gd, auto& gr) {
      qfleet::TaskGradients<double> g = grads(ga, gd, gr);
      mutate(g);
      f.prog.vjp<double>(a.args(), cf, cl, g, o.outputs());
    }, frags);
  };
  using G = qfleet::TaskGradients<double>;
  auto none = [](G&) {};
  bwd({1.0}, {}, none, {"fidelity cotangent", "[batch]"});
  bwd({}, {1, 2, 3}, none, {"leakage cotangent"});
  bwd({kNaN, 1.0}, {}, none, {"fidelity cotangent", "non-finite"});
  bwd({}, {1.0, kInf}, none, {"leakage cotangent", "non-finite"});
  bwd(cot, cot, [](G& g) { g.amplitudes = g.amplitudes.first(6); }, {"gradient amplitudes", "per task"});
  bwd(cot, cot, [](G& g) { g.drift_coeffs = std::span<double>(g.amplitudes).first(2); }, {"gradient drift_coeffs", "shared"});
  bwd(cot, cot, [](G& g) { g.rates = std::span<double>(g.amplitudes).first(2); }, {"gradient rates", "shared"});

  // Wrong precision, both ways.
  const Fixture f32(false, qfleet::Precision::complex64);
  QArgs<float> af(f.b);
  std::vector<float> ff(2);
  qfleet::TaskOutputs<float> of;
  of.fidelity = ff;
  EXPECT_QFLEET_ERROR(f.prog.forward<float>(af.args(), of), "complex128", "complex64");
  std::vector<double> fd(2, -7);
  O od;
  od.fidelity = fd;
  EXPECT_QFLEET_ERROR(f32.prog.forward<double>(a.args(), od), "complex64", "complex128");
  EXPECT_EQ(fd, std::vector<double>(2, -7));
  // Per-task initial states do not apply to gate problems.
  Model g = f.m;
  g.init = Init::Gate;
  g.target = Target::Unitary;
  g.target_mat = pauli('X');
  g.observables.clear();
  const auto pg = qfleet::compile(build(g));
  QArgs<double> ag(f.b);
  ag.initial = {0.5, 0, 0, 0.5, 1, 0, 0, 0};
  std::vector<double> gf(2, -7);
  O og;
  og.fidelity = gf;
  EXPECT_QFLEET_ERROR(pg.forward<double>(ag.args(), og), "gate", "initial");
  EXPECT_EQ(gf, std::vector<double>(2, -7));
  // The program still works after all this.
  expect_outputs(qvjp<double>(f.prog, f.m, f.b, cot, cot, want_all(f.m)), simulate_batch(f.m, f.b), want_all(f.m),
                 1e-10, 0, "after rejected calls");
}

// Amplitudes that are finite but overflow the generator: the adaptive solvers' error
// norm meets NaN (inf / inf) and must reject the step, never accept a NaN state; the
// step size then underflows, and the call reports it at once (10^6 rejected steps of a
// 2 x 2 problem). The outputs of a call that fails during the integration are undefined
// (docs/open_systems.md#errors): only the error is checked.
TEST(OpenErrors, AnOverflowingGeneratorIsAStepSizeErrorForTheAdaptiveSolvers) {
  for (const Solver solver : {Solver::tsit5, Solver::dopri5}) {
    for (const qfleet::OpenForm form : {qfleet::OpenForm::lindblad, qfleet::OpenForm::superoperator}) {
      const std::string name(qfleet::to_string(solver));
      SCOPED_TRACE(name + (form == qfleet::OpenForm::lindblad ? " lindblad" : " superoperator"));
      Fixture f;
      qfleet::OpenCompileOptions o;
      o.solver = solver;
      o.form = form;
      f.prog = qfleet::compile(build(f.m), o);
      for (double& a : f.b.amps) a = 1e300;
      QArgs<double> a(f.b);
      QOut<double> out;
      out.size(f.m, f.b.B, want_all(f.m));
      EXPECT_QFLEET_ERROR(f.prog.forward<double>(a.args(), out.outputs()), name.c_str(), "step size underflow");
    }
  }
}

}  // namespace
