// Planning of density-matrix circuits: sites on the 2n-bit index, constant blocks
// and superoperators, parameter slots, measurements with the readout errors folded
// in, and the memory check (kernels/dm_plan.hpp describes the layout).
#include <algorithm>
#include <cmath>
#include <string>

#include "core/dm_compiled.hpp"
#include "core/plan.hpp"
#include "kernels/channel_matrix.hpp"
#include "kernels/gate_matrix.hpp"
#include "qfleet/error.hpp"

namespace qfleet::detail {

namespace {

std::string op_name(const Operation& op, std::size_t index) {
  std::string s(op.is_channel() ? channel_info(op.channel).name : gate_info(op.gate).name);
  s += " on wires [";
  for (std::size_t i = 0; i < op.wires.size(); ++i) s += (i ? ", " : "") + std::to_string(op.wires[i]);
  return s + "] (operation " + std::to_string(index) + ")";
}

// A site over the given bit positions: the first `controls` are controls, the rest
// targets (first target = most significant bit of the block's local index).
kern::DmSite make_site(const std::vector<int>& bits, int controls) {
  kern::DmSite s;
  s.k_all = static_cast<int>(bits.size());
  s.kt = s.k_all - controls;
  for (int i = 0; i < s.k_all; ++i) s.pos[i] = bits[std::size_t(i)];
  std::sort(s.pos, s.pos + s.k_all);
  for (int i = 0; i < controls; ++i) s.ctrl |= std::uint64_t{1} << bits[std::size_t(i)];
  for (int r = 0; r < (1 << s.kt); ++r) {
    std::uint64_t off = 0;
    for (int j = 0; j < s.kt; ++j) {
      if ((r >> (s.kt - 1 - j)) & 1) off |= std::uint64_t{1} << bits[std::size_t(controls + j)];
    }
    s.off[r] = off;
  }
  return s;
}

// Row bit (high half) and column bit (low half) of wire w.
int row_bit(int n, int w) { return n + kern::bit_of_wire(n, w); }
int col_bit(int n, int w) { return kern::bit_of_wire(n, w); }

void push_block(std::vector<double>& out, const kern::Cx<double>* blk, int entries) {
  for (int e = 0; e < entries; ++e) {
    out.push_back(blk[e].re);
    out.push_back(blk[e].im);
  }
}

kern::DmOp plan_gate(const Operation& op, int n) {
  const GateInfo& info = gate_info(op.gate);
  kern::DmOp d;
  d.kind = kern::kDmGate;
  d.gate = op.gate;
  std::vector<int> rows, cols;
  for (int w : op.wires) {
    rows.push_back(row_bit(n, w));
    cols.push_back(col_bit(n, w));
  }
  d.row = make_site(rows, info.controls);
  d.col = make_site(cols, info.controls);
  d.dim = 1 << d.row.kt;
  if (d.row.kt > 2) throw Error("internal: " + std::string(info.name) + " has more than two target wires");
  return d;
}

kern::DmOp plan_channel(const Operation& op, int n) {
  kern::DmOp d;
  d.kind = kern::kDmChannel;
  d.channel = op.channel;
  std::vector<int> bits;
  for (int w : op.wires) bits.push_back(row_bit(n, w));
  for (int w : op.wires) bits.push_back(col_bit(n, w));
  d.sup = make_site(bits, 0);
  d.dim = 1 << d.sup.kt;
  d.population_coherence = op.wires.size() == 1 && op.channel != Channel::Kraus;
  return d;
}

// S[(a,b),(c,d)] = sum_k K[a][c] conj(K[b][d]) over k wires.
void kraus_superop(const std::vector<std::vector<std::complex<double>>>& ks, int k, kern::Cx<double>* s) {
  const int d = 1 << k, D = d * d;
  for (int a = 0; a < d; ++a) {
    for (int b = 0; b < d; ++b) {
      for (int c = 0; c < d; ++c) {
        for (int e = 0; e < d; ++e) {
          std::complex<double> v = 0;
          for (const auto& K : ks) v += K[std::size_t(a * d + c)] * std::conj(K[std::size_t(b * d + e)]);
          s[(a * d + b) * D + (c * d + e)] = {v.real(), v.imag()};
        }
      }
    }
  }
}

// Readout error folded into a Pauli term: each measured qubit's eigenvalue z is read
// as alpha + beta z in expectation (alpha, beta from its assignment matrix), so a
// word prod_q P_q becomes sum over subsets S of prod_{q in S} beta_q P_q prod_{q not
// in S} alpha_q: 2^w terms for w qubits with readout error.
void fold_readout(double coef, const PauliWord& word, const std::vector<std::array<double, 4>>& ro, int n,
                  std::vector<kern::TermDesc>& out) {
  const auto& f = word.factors;
  std::vector<std::size_t> noisy;
  kern::TermDesc fixed{coef, {}};
  auto add_factor = [&](kern::PauliMasks& m, char letter, int wire) {
    const std::uint64_t bit = std::uint64_t{1} << kern::bit_of_wire(n, wire);
    if (letter == 'X' || letter == 'Y') m.x |= bit;
    if (letter == 'Z' || letter == 'Y') m.z |= bit;
    if (letter == 'Y') ++m.ny;
  };
  for (std::size_t i = 0; i < f.size(); ++i) {
    const int w = f[i].second;
    const bool has = !ro.empty() && ro[std::size_t(w)] != std::array<double, 4>{1, 0, 0, 1};
    if (has) {
      noisy.push_back(i);
    } else {
      add_factor(fixed.masks, f[i].first, w);
    }
  }
  if (noisy.size() > 20) throw Error("an observable word with readout error on more than 20 wires");
  for (std::uint64_t subset = 0; subset < (std::uint64_t{1} << noisy.size()); ++subset) {
    kern::TermDesc t = fixed;
    for (std::size_t j = 0; j < noisy.size(); ++j) {
      const auto& a = ro[std::size_t(f[noisy[j]].second)];
      const double alpha = ((a[0] - a[2]) + (a[1] - a[3])) / 2, beta = ((a[0] - a[2]) - (a[1] - a[3])) / 2;
      if ((subset >> j) & 1) {
        t.coef *= beta;
        add_factor(t.masks, f[noisy[j]].first, f[noisy[j]].second);
      } else {
        t.coef *= alpha;
      }
    }
    if (t.coef != 0) out.push_back(t);
  }
}

// A density matrix and a gradient's three of them must fit in memory.
double dm_state_bytes(int n, Precision precision) {
  const double real_bytes = precision == Precision::complex64 ? 4.0 : 8.0;
  // 2n index bits; the memory check refuses far earlier than 62 bits.
  const double state_bytes = std::ldexp(2.0 * real_bytes, 2 * std::min(n, 30));
  const double phys = static_cast<double>(physical_memory_bytes());
  if (n > 30 || 3.0 * state_bytes > 0.9 * phys) {
    throw Error("a " + std::to_string(n) + "-qubit density matrix needs " + gib(state_bytes) + " in " +
                (real_bytes == 4 ? "complex64" : "complex128") +
                " and a gradient at least three of them, but this machine has " + gib(phys) +
                " of memory (a 12-qubit one is 256 MiB in complex128; docs/noisy.md lists what fits)");
  }
  return state_bytes;
}

// One operation's op: its site, parameter slots, constant block or slot, and flops.
kern::DmOp plan_dm_op(const Operation& op, std::size_t i, int n, DmCompiled& mp, int& slots, std::size_t& mat_entries,
                      std::size_t& dmat_entries) {
  kern::DmOp d = op.is_channel() ? plan_channel(op, n) : plan_gate(op, n);
  d.n_params = static_cast<int>(op.params.size());
  d.first_param = static_cast<int>(mp.params.size());
  bool constant = true;
  double q[kMaxChannelParams] = {0, 0, 0, 0};
  for (std::size_t j = 0; j < op.params.size(); ++j) {
    const Param& p = op.params[j];
    mp.params.push_back({static_cast<std::uint8_t>(p.kind), p.index, p.value, p.scale});
    if (p.kind == Param::Kind::Input) d.reads |= kern::kReadsInputs;
    if (p.kind == Param::Kind::Weight) d.reads |= kern::kReadsWeights;
    constant &= p.kind == Param::Kind::Constant;
    q[j] = p.value;
  }
  const int entries = d.dim * d.dim;
  if (constant) {
    d.fixed = static_cast<int>(mp.fixed_blocks.size() / 2);
    kern::Cx<double> blk[256];
    if (op.is_channel()) {
      if (op.channel == Channel::Kraus) {
        kraus_superop(op.kraus, static_cast<int>(op.wires.size()), blk);
      } else {
        kern::channel_superop<double>(op.channel, q, blk);
      }
    } else if (op.gate == Gate::QubitUnitary) {
      for (int e = 0; e < entries; ++e) blk[e] = {op.matrix[std::size_t(e)].real(), op.matrix[std::size_t(e)].imag()};
    } else {
      kern::gate_block<double>(op.gate, q, blk);
    }
    push_block(mp.fixed_blocks, blk, entries);
  } else {
    d.slot = slots++;
    if (op.is_channel()) mp.checked_channels.push_back(static_cast<int>(i));
  }
  d.mat_entry = mat_entries;
  mat_entries += std::size_t(entries);
  d.dmat_entry = dmat_entries;
  dmat_entries += std::size_t(entries) * std::size_t(d.n_params);
  d.x_block = !op.is_channel() && (op.gate == Gate::PauliX || op.gate == Gate::CNOT || op.gate == Gate::Toffoli);
  // Real flops per sample (the thread count reads them): a block of dim^2 complex
  // multiply-adds (8 flops) on each of the 4^n / 2^k_all groups; a gate is two such
  // blocks (rows and columns).
  const kern::DmSite& s = op.is_channel() ? d.sup : d.row;
  // (a one-wire catalogue channel: 24 flops per group; an X block: a swap, counted as 8)
  const double per_group = d.population_coherence ? 24.0 : (d.x_block ? 8.0 : 8.0 * entries);
  const double per = std::ldexp(per_group, 2 * n - s.k_all) * (op.is_channel() ? 1 : 2);
  mp.flops_forward += per;
  mp.flops_adjoint += per * (2 + d.n_params);  // recomputation, lam, a sandwich per parameter
  return d;
}

// Outputs: expectation values (readout errors folded in), then probabilities, then
// purities; returns the number of output columns.
int plan_dm_outputs(const Circuit& circuit, int n, DmCompiled& mp) {
  kern::DmPlan& v = mp.view;
  mp.readout.clear();
  const auto& ro = circuit.readout();
  for (const auto& a : ro) mp.readout.insert(mp.readout.end(), a.begin(), a.end());
  int col = 0;
  for (const Measurement& m : circuit.measurements()) {
    if (m.kind != Measurement::Kind::Expval) continue;
    mp.term_begin.push_back(static_cast<int>(mp.terms.size()));
    for (const auto& [coef, word] : m.observable.terms) fold_readout(coef, word, ro, n, mp.terms);
    ++col;
  }
  mp.term_begin.push_back(static_cast<int>(mp.terms.size()));
  v.n_expvals = col;
  for (const Measurement& m : circuit.measurements()) {
    if (m.kind != Measurement::Kind::Probs) continue;
    mp.probs_begin.push_back(static_cast<int>(mp.probs_pos.size()));
    for (int w : m.wires) mp.probs_pos.push_back(kern::bit_of_wire(n, w));
    mp.probs_out.push_back(col);
    v.max_probs_k = std::max<int>(v.max_probs_k, static_cast<int>(m.wires.size()));
    if (static_cast<long long>(col) + (1LL << m.wires.size()) > (1LL << 30)) {
      throw Error("too many outputs: probabilities exceed 2^30 columns");
    }
    col += 1 << m.wires.size();
  }
  mp.probs_begin.push_back(static_cast<int>(mp.probs_pos.size()));
  v.purity_out = col;
  for (const Measurement& m : circuit.measurements()) {
    if (m.kind == Measurement::Kind::Purity) ++v.n_purity;
  }
  v.n_outputs = col + v.n_purity;
  return v.n_outputs;
}

// The view's pointers into mp's arrays (they move with it).
void point_dm_view(DmCompiled& mp) {
  kern::DmPlan& v = mp.view;
  v.ops = mp.ops.data();
  v.n_ops = static_cast<int>(mp.ops.size());
  v.params = mp.params.data();
  v.n_params = static_cast<int>(mp.params.size());
  v.fixed_blocks = mp.fixed_blocks.data();
  v.terms = mp.terms.data();
  v.term_begin = mp.term_begin.data();
  v.probs_pos = mp.probs_pos.data();
  v.probs_begin = mp.probs_begin.data();
  v.probs_out = mp.probs_out.data();
  v.n_probs = static_cast<int>(mp.probs_out.size());
  v.readout = mp.readout.empty() ? nullptr : mp.readout.data();
  v.amp_index = mp.amp_index.empty() ? nullptr : mp.amp_index.data();
  v.perm_runs = mp.perm.runs.data();
  v.n_perm_runs = static_cast<int>(mp.perm.runs.size());
  v.perm_index = mp.perm.index.data();
  v.perm_phase = mp.perm.phase.data();
}

// The runs of constant permutation gates (perm_runs.hpp), whose maps are of the n-qubit
// basis: a gate's column bits are its wires' bits there (col_bit).
void find_dm_perm_runs(int n, DmCompiled& mp) {
  std::vector<PermCandidate> candidates;
  for (const kern::DmOp& op : mp.ops) {
    PermCandidate c;
    if (op.kind == kern::kDmGate && op.fixed >= 0) {
      c.site.k_all = op.col.k_all;
      c.site.kt = op.col.kt;
      for (int i = 0; i < op.col.k_all; ++i) c.site.pos[i] = op.col.pos[i];
      c.site.ctrl = op.col.ctrl;
      for (int r = 0; r < (1 << op.col.kt); ++r) c.site.off[r] = op.col.off[r];
      c.block = mp.fixed_blocks.data() + 2 * std::size_t(op.fixed);
    }
    candidates.push_back(c);
  }
  const std::vector<int> run_of = find_perm_runs(n, candidates, mp.perm);
  for (std::size_t k = 0; k < mp.ops.size(); ++k) mp.ops[k].run = run_of[k];
}

}  // namespace

void build_dm_plan(const Circuit& circuit, const CompileOptions& options, Plan& plan) {
  auto mp = std::make_shared<DmCompiled>();
  const int n = circuit.n_qubits();
  mp->state_bytes = dm_state_bytes(n, options.precision);
  set_circuit_sizes(plan, circuit, options);

  kern::DmPlan& v = mp->view;
  v.n = n;
  v.dim = plan.dim;
  v.dim2 = plan.dim * plan.dim;
  v.n_inputs = plan.n_inputs;
  v.n_weights = plan.n_weights;
  std::size_t mat_entries = 0, dmat_entries = 0;
  int slots = 0;
  const auto& ops = circuit.operations();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    mp->ops.push_back(plan_dm_op(ops[i], i, n, *mp, slots, mat_entries, dmat_entries));
    mp->op_names.push_back(op_name(ops[i], i));
  }
  v.n_slots = slots;
  v.mat_entries = mat_entries;
  v.dmat_entries = dmat_entries;
  plan.n_outputs = plan_dm_outputs(circuit, n, *mp);
  plan.n_expvals = v.n_expvals;

  plan.amp = plan_amplitude_embedding(circuit);
  if (const auto& a = circuit.amplitude_embedding_spec()) {
    mp->amp_index = plan.amp.index;
    v.amp = true;
    v.amp_first_input = a->first_input;
    v.amp_n_features = a->n_features;
    v.amp_len = static_cast<int>(plan.amp.index.size());
    v.amp_normalize = a->normalize;
    v.amp_pad = a->pad_with;
  }
  find_dm_perm_runs(n, *mp);
  point_dm_view(*mp);
  plan.flops_forward = mp->flops_forward;
  plan.flops_adjoint = mp->flops_adjoint;
  pack_dm_plan(*mp);
  plan.kind = ModelKind::density_matrix;
  plan.dm = std::move(mp);
}

}  // namespace qfleet::detail
