// Density-matrix circuits against the dense Kraus reference (tests/reference/dm.hpp):
// the density-matrix backend matrix (every channel of the engine's table, constant or
// read from weights or inputs, x every density_matrix row of the executor registry and
// the cuda body emulated on the CPU x
// both precisions x batch sizes around the lanes and the warp, with readout errors, probabilities and purity), adjoint gradients
// against finite differences, the checkpointed adjoint, physical checks over deep
// circuits, sampling, and the errors.
#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "reference/dm.hpp"
#include "core/dm_compiled.hpp"
#include "core/plan.hpp"
#include "unit/dm_group_emu.hpp"
#include "unit/expect_error.hpp"
#include "unit/harness.hpp"
#include "unit/matrix_rows.hpp"

namespace {

using qfleet::Param;

// Drives a qfleet::Circuit and a ref::DmCircuit with the same calls.
struct DmTwin {
  qfleet::Circuit q;
  ref::DmCircuit r;
  explicit DmTwin(int n) : q(n) { r.base.n = n; }
  DmTwin& add(const std::string& name, const std::vector<int>& wires, const std::vector<Param>& p = {}) {
    q.add(name, wires, p);
    for (const auto& x : p) r.base.note(x);
    ref::DmRefOp op;
    op.gate = ref::Op{name, wires, p, ref::Mat()};
    r.ops.push_back(op);
    return *this;
  }
  DmTwin& channel(const std::string& name, const std::vector<int>& wires, const std::vector<Param>& p) {
    q.channel(name, wires, p);
    for (const auto& x : p) r.base.note(x);
    ref::DmRefOp op;
    op.channel = true;
    op.name = name;
    op.wires = wires;
    op.params = p;
    r.ops.push_back(op);
    return *this;
  }
  DmTwin& kraus(const std::vector<int>& wires, const std::vector<ref::Mat>& ks) {
    std::vector<std::vector<std::complex<double>>> rows;
    for (const auto& k : ks) rows.push_back(ref::row_major(k));
    q.kraus(wires, rows);
    ref::DmRefOp op;
    op.channel = true;
    op.name = "Kraus";
    op.wires = wires;
    op.kraus = ks;
    r.ops.push_back(op);
    return *this;
  }
  DmTwin& readout(int wire, double p10, double p01) {
    q.readout_error(wire, p10, p01);
    if (r.readout.empty()) r.readout.assign(std::size_t(r.base.n), {1, 0, 0, 1});
    r.readout[std::size_t(wire)] = {1 - p10, p01, p10, 1 - p01};
    return *this;
  }
  DmTwin& expval(const std::vector<std::pair<double, ref::Word>>& terms) {
    std::vector<std::pair<double, std::string>> t;
    for (const auto& [c, w] : terms) t.emplace_back(c, w.str());
    q.expval(qfleet::Observable::sum(t));
    r.base.meas.push_back(ref::Meas{false, terms, {}});
    return *this;
  }
  DmTwin& probs(const std::vector<int>& wires) {
    q.probs(wires);
    r.base.meas.push_back(ref::Meas{true, {}, wires});
    return *this;
  }
  DmTwin& purity() {
    q.purity();
    ++r.n_purity;
    return *this;
  }
};

// A random Kraus channel on k wires: the columns of a random isometry V (m d x d),
// K_j = rows j d .. (j+1) d of V, so sum K^dag K = V^dag V = I.
std::vector<ref::Mat> random_kraus(std::mt19937_64& rng, int k, int m) {
  const ref::Index d = ref::Index{1} << k;
  const ref::Mat A = ref::random_matrix(rng, m * d, d);
  const ref::Mat V = Eigen::HouseholderQR<ref::Mat>(A).householderQ() * ref::Mat::Identity(m * d, d);
  std::vector<ref::Mat> ks;
  for (int j = 0; j < m; ++j) ks.push_back(V.block(j * d, 0, d, d));
  return ks;
}

struct ChannelCase {
  std::string name;
  int wires;
  std::vector<double> lo, hi;  // parameter ranges the batch draws from
};

const std::vector<ChannelCase> kChannels = {
    {"Depolarizing", 1, {0.05}, {0.6}},
    {"BitFlip", 1, {0.05}, {0.6}},
    {"PhaseFlip", 1, {0.05}, {0.6}},
    {"PauliChannel", 1, {0.05, 0.05, 0.05}, {0.3, 0.3, 0.3}},
    {"AmplitudeDamping", 1, {0.05}, {0.9}},
    {"GeneralizedAmplitudeDamping", 1, {0.05, 0.1}, {0.9, 0.9}},
    {"PhaseDamping", 1, {0.05}, {0.9}},
    {"ThermalRelaxation", 1, {0.01, 10, 2, 0.5}, {0.3, 60, 12, 3}},
    {"TwoQubitDepolarizing", 2, {0.05}, {0.6}},
};

// Parameters of the channel as weights w[first ..] (scale maps [0,1) to [lo, hi)):
// weight j = lo + (hi - lo) * u needs affine maps, so instead the weights are drawn
// in [lo, hi] directly by the test and used with scale 1.
enum class Source { Constant, Weight, Input };

// The circuit: gates reading inputs and weights, the channel, more gates, readout
// errors, expvals (with a two-wire word), probabilities and a purity.
DmTwin channel_circuit(const ChannelCase& ch, Source src, std::mt19937_64& rng, int& ni, int& nw,
                          std::vector<double>& lo, std::vector<double>& hi) {
  const int n = 3;
  DmTwin t(n);
  // Inputs 0..2 and weights 0..2 are gate angles in [0.3, 1.2].
  t.add("RX", {0}, {Param::input(0)}).add("Hadamard", {1}).add("RY", {2}, {Param::input(1, 0.7)});
  t.add("CNOT", {0, 1}).add("Rot", {1}, {Param::weight(0), Param::weight(1, -0.5), Param::weight(2)});
  t.add("CRY", {2, 0}, {Param::input(2)});
  ni = 3;
  nw = 3;
  lo.assign(3, 0.3);
  hi.assign(3, 1.2);
  const std::vector<int> wires = ch.wires == 1 ? std::vector<int>{ref::randint(rng, 0, n - 1)}
                                               : ref::random_wires(rng, n, 2);
  std::vector<Param> ps;
  for (std::size_t j = 0; j < ch.lo.size(); ++j) {
    if (src == Source::Constant) {
      ps.push_back(Param(ref::uniform(rng, ch.lo[j], ch.hi[j])));
    } else if (src == Source::Weight) {
      ps.push_back(Param::weight(nw++));
    } else {
      ps.push_back(Param::input(ni++));
    }
    if (src != Source::Constant) {
      lo.push_back(ch.lo[j]);
      hi.push_back(ch.hi[j]);
    }
  }
  t.channel(ch.name, wires, ps);
  t.add("IsingXX", {0, 2}, {Param::weight(1)}).add("Toffoli", {1, 2, 0}).add("RZ", {1}, {Param::input(0)});
  t.channel("AmplitudeDamping", {1}, {Param(0.2)});
  t.readout(0, 0.03, 0.08).readout(2, 0.1, 0.02);
  t.expval({{0.7, ref::word({{'Z', 0}})}, {-0.4, ref::word({{'X', 1}, {'Y', 2}})}});
  t.expval({{1.0, ref::word({{'Y', 0}, {'Z', 2}})}});
  t.probs({2, 0});
  t.purity();
  return t;
}

// A batch whose inputs and weights column j is uniform in [lo_j, hi_j] (inputs first,
// then weights, as channel_circuit lists them).
ref::Batch ranged_batch(std::mt19937_64& rng, std::size_t B, int ni, int nw, bool per_sample, Source src,
                        const std::vector<double>& lo, const std::vector<double>& hi) {
  ref::Batch b;
  b.B = B;
  b.ni = ni;
  b.nw = nw;
  b.per_sample = per_sample;
  // Ranges: columns 0..2 of each are gates; the channel's extra columns follow in
  // inputs (Source::Input) or weights (Source::Weight).
  auto range = [&](bool input, int col, double& l, double& h) {
    l = 0.3;
    h = 1.2;
    const bool channel_col = col >= 3 && ((input && src == Source::Input) || (!input && src == Source::Weight));
    if (channel_col) {
      l = lo[std::size_t(3 + col - 3)];
      h = hi[std::size_t(3 + col - 3)];
    }
  };
  for (std::size_t s = 0; s < B; ++s) {
    for (int i = 0; i < ni; ++i) {
      double l, h;
      range(true, i, l, h);
      b.x.push_back(ref::uniform(rng, l, h));
    }
  }
  for (std::size_t s = 0; s < (per_sample ? B : 1); ++s) {
    for (int j = 0; j < nw; ++j) {
      double l, h;
      range(false, j, l, h);
      b.w.push_back(ref::uniform(rng, l, h));
    }
  }
  return b;
}

// A row of the matrix: an executor of the registry, or (exec null) the cuda body,
// kernels/dm_group.hpp, on groups of 2 std::threads (unit/dm_group_emu.hpp).
struct DmRow {
  std::string name;
  int lanes;
  const qfleet::detail::Executor* exec;
};

std::vector<DmRow> dm_rows() {
  std::vector<DmRow> v;
  for (const auto* row : qfleet_test::matrix_rows(qfleet::detail::ModelKind::density_matrix)) {
    v.push_back({std::string(row->device) + " " + row->isa, row->lanes_f64, row});
  }
  v.push_back({"emulated cuda group", 1, nullptr});
  return v;
}

// Forward outputs and (with cot) the fused vjp of a row.
template <class R>
struct RowRun {
  std::vector<double> out;
  ref::QGrad<R> g;
};
template <class R>
RowRun<R> run_row(const DmTwin& t, const DmRow& row, const ref::Batch& b, const std::vector<double>* cot) {
  qfleet::CompileOptions o = row.exec ? qfleet_test::on_row(qfleet::CompileOptions{}, *row.exec) : qfleet::CompileOptions{};
  o.precision = std::is_same_v<R, float> ? qfleet::Precision::complex64 : qfleet::Precision::complex128;
  RowRun<R> r;
  if (row.exec == nullptr) {
    o.simulator = qfleet::Simulator::density_matrix;
    qfleet::detail::Plan plan(t.q);
    qfleet::detail::build_dm_plan(t.q, o, plan);
    const emu::DmRunner<R> group{plan.dm->view, 2};
    r.out = group.forward(b);
    if (cot != nullptr) r.g = group.vjp(b, *cot);
    return r;
  }
  const qfleet::Program p = qfleet::compile(t.q, o);
  EXPECT_EQ(p.simulator(), qfleet::Simulator::density_matrix);
  const std::vector<R> out = ref::q_forward<R>(p, b);
  r.out.assign(out.begin(), out.end());
  if (cot != nullptr) r.g = ref::q_vjp<R>(p, b, *cot, true);
  return r;
}

template <class R>
void check_case(const DmTwin& t, const ref::Batch& b, const DmRow& row, const std::string& what) {
  const std::size_t K = std::size_t(t.r.n_outputs());
  // Gradients (complex128): a random cotangent per sample, against finite differences.
  std::mt19937_64 rng(7);
  const std::vector<double> cot = ref::uniform_vec(rng, b.B * K, -1, 1);
  const bool grads = std::is_same_v<R, double>;
  const RowRun<R> run = run_row<R>(t, row, b, grads ? &cot : nullptr);
  ASSERT_EQ(run.out.size(), b.B * K) << what;
  const std::vector<double>& out = run.out;
  const double tol = std::is_same_v<R, float> ? 2e-5 : 1e-11;
  for (std::size_t s = 0; s < b.B; ++s) {
    const auto want = ref::dm_outputs(t.r, b.xrow(s), b.wrow(s));
    for (std::size_t k = 0; k < K; ++k) {
      ASSERT_NEAR(out[s * K + k], want[k], tol) << what << " sample " << s << " output " << k;
    }
  }
  if (!grads) return;
  const ref::QGrad<R>& g = run.g;
  std::vector<double> gw_sum(std::size_t(b.nw), 0.0);
  for (std::size_t s = 0; s < b.B; ++s) {
    std::vector<double> x(b.xrow(s), b.xrow(s) + b.ni), w(b.wrow(s), b.wrow(s) + b.nw), gx, gw;
    ref::dm_fd_gradient(t.r, x, w, cot.data() + s * K, gx, gw);
    for (int i = 0; i < b.ni; ++i) {
      ASSERT_NEAR(g.gi[s * std::size_t(b.ni) + std::size_t(i)], gx[std::size_t(i)], 1e-7 * (1 + std::abs(gx[std::size_t(i)])))
          << what << " d/dinput " << i << " sample " << s;
    }
    for (int j = 0; j < b.nw; ++j) {
      if (b.per_sample && b.B > 1) {
        ASSERT_NEAR(g.gw[s * std::size_t(b.nw) + std::size_t(j)], gw[std::size_t(j)], 1e-7 * (1 + std::abs(gw[std::size_t(j)])))
            << what << " d/dweight " << j << " sample " << s;
      }
      gw_sum[std::size_t(j)] += gw[std::size_t(j)];
    }
    for (std::size_t k = 0; k < K; ++k) ASSERT_NEAR(g.out[s * K + k], out[s * K + k], 1e-13) << what << " fused";
  }
  if (!(b.per_sample && b.B > 1)) {
    for (int j = 0; j < b.nw; ++j) {
      ASSERT_NEAR(g.gw[std::size_t(j)], gw_sum[std::size_t(j)], 1e-7 * (1 + std::abs(gw_sum[std::size_t(j)])))
          << what << " d/dweight " << j << " (shared)";
    }
  }
}

// The density-matrix backend matrix: every channel of the engine's table (Kraus: the
// next test), its parameters constant or read from weights or inputs, on every
// density_matrix row of the executor registry (each cpu instruction set; cuda where a
// GPU is visible) and the cuda body on the CPU (the emulated row), both precisions,
// batch sizes around the row's lanes and the warp. A channel added to the table without a case
// here fails, as does a row on a device the matrix cannot drive.
TEST(DmMatrix, EveryChannelEverySourceEveryRowBothPrecisions) {
  const std::vector<DmRow> rows = dm_rows();
  std::mt19937_64 rng(2026);
  int channels = 0;
  for (const qfleet::ChannelInfo& info : qfleet::kChannelTable) {
    if (info.id == qfleet::Channel::Kraus) continue;  // DmMatrix.KrausChannelsOnOneAndTwoWires
    const auto ch = std::find_if(kChannels.begin(), kChannels.end(),
                                 [&](const ChannelCase& c) { return c.name == info.name; });
    if (ch == kChannels.end()) {
      ADD_FAILURE() << "channel " << info.name << " is in the engine's table but has no case here (kChannels)";
      continue;
    }
    ++channels;
    for (Source src : {Source::Constant, Source::Weight, Source::Input}) {
      int ni = 0, nw = 0;
      std::vector<double> lo, hi;
      const DmTwin t = channel_circuit(*ch, src, rng, ni, nw, lo, hi);
      for (const DmRow& row : rows) {
        const int L = row.lanes;
        // (1, L-1, L, L+1, 33; the cuda row's L is the warp: 31, 32, 33; the emulated
        // body's 1 and 3: its threads sync by futexes, one sample after another)
        std::set<std::size_t> sizes = {1, std::size_t(L), std::size_t(L + 1), 33};
        if (L > 1) sizes.insert(std::size_t(L - 1));
        if (row.exec == nullptr) sizes = {1, 3};
        for (std::size_t B : sizes) {
          for (bool per_sample : {false, true}) {
            // (its own generator: the batch sizes depend on the row's lanes)
            std::mt19937_64 brng = ref::case_rng(ch->name, {std::uint64_t(src), B, per_sample});
            const ref::Batch b = ranged_batch(brng, B, ni, nw, per_sample, src, lo, hi);
            const std::string what = ch->name + " src " + std::to_string(int(src)) + " " + row.name + " B " +
                                     std::to_string(B) + (per_sample ? " per-sample" : "");
            check_case<double>(t, b, row, what);
            check_case<float>(t, b, row, what);
          }
        }
      }
    }
  }
  EXPECT_EQ(channels, int(qfleet::kChannelTable.size()) - 1);
}

TEST(DmMatrix, KrausChannelsOnOneAndTwoWires) {
  std::mt19937_64 rng(11);
  for (int k : {1, 2}) {
    DmTwin t(3);
    t.add("RY", {0}, {Param::weight(0)}).add("CNOT", {0, 2}).add("RX", {1}, {Param::input(0)});
    t.kraus(k == 1 ? std::vector<int>{2} : std::vector<int>{2, 0}, random_kraus(rng, k, 3));
    t.add("CRX", {2, 1}, {Param::weight(1)});
    t.expval({{1.0, ref::word({{'Z', 0}, {'X', 2}})}}).probs({0, 1, 2}).purity();
    for (std::size_t B : {std::size_t(1), std::size_t(5)}) {
      const ref::Batch b = ref::random_batch(rng, B, 1, 2, false);
      for (const DmRow& row : dm_rows()) {
        const std::string what = "Kraus k=" + std::to_string(k) + " " + row.name;
        check_case<double>(t, b, row, what);
        check_case<float>(t, b, row, what);
      }
    }
  }
}

// Channels of zero strength are the identity bit for bit, and a noiseless circuit
// run as density matrices equals |psi><psi| of the state-vector engine.
TEST(DensityMatrix, ZeroStrengthChannelsAreTheNoiselessEngineBitForBit) {
  auto build = [](bool channels) {
    qfleet::Circuit c(3);
    c.angle_embedding({0, 1, 2}, qfleet::Rotation::Y).strongly_entangling_layers({0, 1, 2}, 2);
    if (channels) {
      c.channel("Depolarizing", {0}, {0.0}).channel("AmplitudeDamping", {1}, {0.0}).channel("PhaseDamping", {2}, {0.0});
      c.channel("TwoQubitDepolarizing", {0, 2}, {0.0}).channel("PauliChannel", {1}, {0.0, 0.0, 0.0});
      c.channel("ThermalRelaxation", {2}, {0.0, 50.0, 70.0, 0.0}).channel("GeneralizedAmplitudeDamping", {0}, {0.0, 0.3});
    }
    c.expval("Z0 X1").probs({1, 2});
    return c;
  };
  std::mt19937_64 rng(3);
  const ref::Batch b = ref::random_batch(rng, 6, 3, 18, false);
  qfleet::CompileOptions dm;
  dm.simulator = qfleet::Simulator::density_matrix;
  const qfleet::Program noisy = qfleet::compile(build(true), dm), clean = qfleet::compile(build(false), dm);
  const auto a = ref::q_forward<double>(noisy, b), c = ref::q_forward<double>(clean, b);
  ASSERT_EQ(a, c);  // bit for bit
  const ref::Run<double> run(b);
  std::vector<std::complex<double>> ra(b.B * 64), rc(b.B * 64);
  noisy.density_matrices<double>(run.args(b.B), ra);
  clean.density_matrices<double>(run.args(b.B), rc);
  ASSERT_EQ(ra, rc);
  const qfleet::Program sv = qfleet::compile(build(false));
  ASSERT_EQ(sv.simulator(), qfleet::Simulator::statevector);
  const auto psi = ref::q_states<double>(sv, b);
  const auto o = ref::q_forward<double>(sv, b);
  for (std::size_t s = 0; s < b.B; ++s) {
    for (int i = 0; i < 8; ++i) {
      for (int j = 0; j < 8; ++j) {
        const auto want = psi[s * 8 + std::size_t(i)] * std::conj(psi[s * 8 + std::size_t(j)]);
        ASSERT_LT(std::abs(rc[s * 64 + std::size_t(i * 8 + j)] - want), 1e-13);
      }
    }
  }
  for (std::size_t k = 0; k < o.size(); ++k) ASSERT_NEAR(c[k], o[k], 1e-13);
}

// Trace 1, Hermitian and positive after hundreds of random gates and channels.
TEST(DensityMatrix, DeepCircuitsStayPhysical) {
  std::mt19937_64 rng(5);
  const int n = 4;
  qfleet::Circuit c(n);
  const char* one[] = {"Depolarizing", "AmplitudeDamping", "PhaseDamping", "BitFlip"};
  for (int k = 0; k < 300; ++k) {
    const int w = ref::randint(rng, 0, n - 1);
    switch (k % 4) {
      case 0:
        c.add("Rot", {w}, {ref::uniform(rng, -3, 3), ref::uniform(rng, -3, 3), ref::uniform(rng, -3, 3)});
        break;
      case 1: {
        const auto ws = ref::random_wires(rng, n, 2);
        c.add("CNOT", ws);
        break;
      }
      case 2:
        c.channel(one[ref::randint(rng, 0, 3)], {w}, {ref::uniform(rng, 0, 0.05)});
        break;
      default:
        c.channel("TwoQubitDepolarizing", ref::random_wires(rng, n, 2), {ref::uniform(rng, 0, 0.02)});
    }
  }
  c.purity();
  const qfleet::Program p = qfleet::compile(c);
  std::vector<std::complex<double>> rho(256);
  p.density_matrices<double>(qfleet::BatchArgs<double>{}, rho);
  ref::Mat m(16, 16);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) m(i, j) = rho[std::size_t(i * 16 + j)];
  EXPECT_NEAR(m.trace().real(), 1.0, 1e-12);
  EXPECT_LT((m - m.adjoint()).norm(), 1e-13);
  const Eigen::SelfAdjointEigenSolver<ref::Mat> es(m);
  EXPECT_GT(es.eigenvalues().minCoeff(), -1e-13);
  const auto pur = p.forward<double>(qfleet::BatchArgs<double>{});
  EXPECT_NEAR(pur[0], (m * m).trace().real(), 1e-13);
  EXPECT_LT(pur[0], 0.5);  // the noise has mixed the state
}

// The checkpointed adjoint (segments rerun from stored states) gives the same gradient.
TEST(DensityMatrix, CheckpointedAdjointMatchesStoredStates) {
  std::mt19937_64 rng(9);
  qfleet::Circuit c(3);
  for (int l = 0; l < 6; ++l) {
    for (int w = 0; w < 3; ++w) {
      c.add("RY", {w}, {Param::weight(3 * l + w)}).channel("Depolarizing", {w}, {Param::input(w, 0.1)});
    }
    c.add("CNOT", {l % 3, (l + 1) % 3});
  }
  c.expval("Z0 Z2").probs({1}).purity();
  const qfleet::Program p = qfleet::compile(c);
  ref::Batch b = ref::random_batch(rng, 5, 3, 18, false, 0.0, 1.0);
  const std::vector<double> cot = ref::uniform_vec(rng, 5 * 4, -1, 1);
  const auto full = ref::q_vjp<double>(p, b, cot);
  setenv("QFLEET_DM_MAX_STORED", "2", 1);
  const auto seg = ref::q_vjp<double>(p, b, cot);
  unsetenv("QFLEET_DM_MAX_STORED");
  for (std::size_t i = 0; i < full.gi.size(); ++i) EXPECT_NEAR(seg.gi[i], full.gi[i], 1e-13);
  for (std::size_t i = 0; i < full.gw.size(); ++i) EXPECT_NEAR(seg.gw[i], full.gw[i], 1e-13);
}

TEST(DensityMatrix, AmplitudeEmbeddingGradientMatchesFiniteDifferences) {
  DmTwin t(2);
  t.q.amplitude_embedding({0, 1}, 3, 0, true, 0.5);
  t.r.base.amp = ref::AmpEmb{{0, 1}, 0, 3, true, 0.5};
  t.r.base.n_inputs = 3;
  t.add("RX", {0}, {Param::weight(0)}).channel("AmplitudeDamping", {1}, {Param(0.3)});
  t.expval({{1.0, ref::word({{'Z', 0}})}, {0.5, ref::word({{'X', 1}})}}).purity();
  std::mt19937_64 rng(4);
  const ref::Batch b = ref::random_batch(rng, 3, 3, 1, false, 0.2, 1.0);
  const DmRow cpu{"cpu automatic", 1, &qfleet::detail::cpu_executor(qfleet::detail::ModelKind::density_matrix, "automatic")};
  check_case<double>(t, b, cpu, "amplitude embedding");
}

TEST(DensityMatrix, SamplesAreSeededAndFollowTheReadoutProbabilities) {
  qfleet::Circuit c(2);
  c.add("RY", {0}, {1.1}).add("CNOT", {0, 1}).channel("Depolarizing", {1}, {0.2});
  c.readout_error(0, 0.05, 0.15).probs({0, 1});
  const qfleet::Program p = qfleet::compile(c);
  const std::size_t shots = 40000;
  std::vector<std::uint64_t> a(shots), b(shots);
  p.sample<double>(qfleet::BatchArgs<double>{}, {0, 1}, shots, 42, a);
  p.sample<double>(qfleet::BatchArgs<double>{}, {0, 1}, shots, 42, b);
  ASSERT_EQ(a, b);
  const auto probs = p.forward<double>(qfleet::BatchArgs<double>{});
  std::vector<double> hist(4, 0.0);
  for (auto o : a) hist[o] += 1.0 / double(shots);
  for (int o = 0; o < 4; ++o) {
    const double sigma = std::sqrt(probs[std::size_t(o)] * (1 - probs[std::size_t(o)]) / double(shots));
    EXPECT_NEAR(hist[std::size_t(o)], probs[std::size_t(o)], 5 * sigma + 1e-12) << "outcome " << o;
  }
}

TEST(DensityMatrix, ErrorsAreClear) {
  using qfleet_test::error_of;
  qfleet::Circuit c(2);
  EXPECT_NE(error_of([&] { c.channel("Depolarizing", {0}, {1.5}); }).find("outside [0, 1]"), std::string::npos);
  EXPECT_NE(error_of([&] { c.channel("Depolarizing", {0, 1}, {0.1}); }).find("acts on 1 wire"), std::string::npos);
  EXPECT_NE(error_of([&] { c.channel("Nope", {0}, {0.1}); }).find("known channels"), std::string::npos);
  EXPECT_NE(error_of([&] { c.channel("ThermalRelaxation", {0}, {0.0, 10.0, 30.0, 1.0}); }).find("exceeds 2 t1"),
            std::string::npos);
  EXPECT_NE(error_of([&] { c.channel("PauliChannel", {0}, {0.5, 0.4, 0.3}); }).find("exceeds 1"), std::string::npos);
  EXPECT_NE(error_of([&] { c.kraus({0}, {{1, 0, 0, 1}, {0, 1, 0, 0}}); }).find("not trace preserving"),
            std::string::npos);
  EXPECT_NE(error_of([&] { c.readout_matrix(0, {0.9, 0.2, 0.2, 0.8}); }).find("column-stochastic"),
            std::string::npos);
  EXPECT_NE(error_of([&] { c.readout_error(5, 0.1, 0.1); }).find("out of range"), std::string::npos);
  EXPECT_TRUE(c.operations().empty());  // nothing was added by the failed calls
  c.add("RX", {0}, {Param::input(0)}).channel("AmplitudeDamping", {1}, {Param::input(1)}).expval("Z1");
  qfleet::CompileOptions sv;
  sv.simulator = qfleet::Simulator::statevector;
  EXPECT_NE(error_of([&] { qfleet::compile(c, sv); }).find("density-matrix"), std::string::npos);
  const qfleet::Program p = qfleet::compile(c);
  std::vector<double> x = {0.3, 0.2, 0.1, 1.7}, out(2, -7.0);
  const std::string e = error_of([&] { p.forward<double>(qfleet::BatchArgs<double>{2, x, {}}, out); });
  EXPECT_NE(e.find("sample 1"), std::string::npos) << e;
  EXPECT_NE(e.find("AmplitudeDamping on wires [1]"), std::string::npos) << e;
  EXPECT_EQ(out[0], -7.0);  // nothing written
  std::vector<std::complex<double>> st(8);
  EXPECT_NE(error_of([&] { p.states<double>(qfleet::BatchArgs<double>{2, {x.data(), 4}, {}}, st); })
                .find("density_matrices()"),
            std::string::npos);
  qfleet::Circuit big(20);
  big.channel("Depolarizing", {0}, {0.1}).expval("Z0");
  EXPECT_NE(error_of([&] { qfleet::compile(big); }).find("density matrix needs"), std::string::npos);
}

}  // namespace
