// Planning: validation and everything a call would otherwise redo.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/diag_runs.hpp"
#include "core/plan.hpp"
#include "core/sv_pack.hpp"
#include "kernels/gate_matrix.hpp"
#include "kernels/sv_plan.hpp"
#include "qfleet/error.hpp"

namespace qfleet::detail {

std::size_t physical_memory_bytes() {
  static const std::size_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0) return std::size_t{1} << 40;
    return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page);
  }();
  return bytes;
}

std::string gib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

AmpEmbedPlan plan_amplitude_embedding(const Circuit& circuit) {
  AmpEmbedPlan amp;
  const auto& a = circuit.amplitude_embedding_spec();
  if (!a) return amp;
  amp.active = true;
  amp.first_input = a->first_input;
  amp.n_features = a->n_features;
  amp.normalize = a->normalize;
  amp.pad = a->pad_with;
  const int n = circuit.n_qubits(), k = static_cast<int>(a->wires.size());
  for (std::uint64_t j = 0; j < (std::uint64_t{1} << k); ++j) {
    std::uint64_t idx = 0;  // amplitude j: bit t of j (from the top) on wire a->wires[t]
    for (int t = 0; t < k; ++t) {
      if ((j >> (k - 1 - t)) & 1) idx |= std::uint64_t{1} << kern::bit_of_wire(n, a->wires[std::size_t(t)]);
    }
    amp.index.push_back(idx);
  }
  return amp;
}

namespace {

kern::OpDesc plan_op(const Operation& op, int n, SvPlanParts& parts) {
  const GateInfo& info = gate_info(op.gate);
  const int k_all = static_cast<int>(op.wires.size());
  const int controls = info.controls;
  kern::OpDesc p{};
  p.gate = op.gate;
  p.site.k_all = k_all;
  p.site.kt = k_all - controls;
  // Every executor (cpu, and the cuda bodies) carries blocks of 1 or 2 target wires
  // (kern::kMaxBlockTargets): the catalogue's gates and QubitUnitary never need more.
  if (p.site.kt < 1 || p.site.kt > kern::kMaxBlockTargets) {
    throw Error("internal: " + std::string(info.name) + " on " + std::to_string(p.site.kt) +
                " target wires; the executors take 1 to " + std::to_string(kern::kMaxBlockTargets));
  }
  // The cuda bodies keep one derivative block for 2-target gates.
  if (p.site.kt > 1 && op.params.size() > 1) {
    throw Error("internal: " + std::string(info.name) + " is a 2-target block with several parameters; the "
                "executors take one");
  }
  const int dim = 1 << p.site.kt;
  for (int i = 0; i < k_all; ++i) p.site.pos[i] = kern::bit_of_wire(n, op.wires[i]);
  std::sort(p.site.pos, p.site.pos + k_all);
  for (int i = 0; i < controls; ++i) p.site.ctrl |= std::uint64_t{1} << kern::bit_of_wire(n, op.wires[i]);
  for (int r = 0; r < dim; ++r) {
    std::uint64_t off = 0;
    for (int j = 0; j < p.site.kt; ++j) {
      if ((r >> (p.site.kt - 1 - j)) & 1) off |= std::uint64_t{1} << kern::bit_of_wire(n, op.wires[controls + j]);
    }
    p.site.off[r] = off;
  }
  p.n_params = static_cast<int>(op.params.size());
  p.first_param = static_cast<int>(parts.params.size());
  bool constant = true;
  for (const Param& q : op.params) {
    parts.params.push_back({static_cast<std::uint8_t>(q.kind), q.index, q.value, q.scale});
    if (q.kind == Param::Kind::Input) p.reads |= kern::kReadsInputs;
    if (q.kind == Param::Kind::Weight) p.reads |= kern::kReadsWeights;
    constant &= q.kind == Param::Kind::Constant;
  }
  if (constant) {
    p.fixed = static_cast<int>(parts.fixed_blocks.size() / 2);
    if (op.gate == Gate::QubitUnitary) {
      for (const std::complex<double>& z : op.matrix) {
        parts.fixed_blocks.push_back(z.real());
        parts.fixed_blocks.push_back(z.imag());
      }
    } else {
      kern::Cx<double> blk[64];
      double q[kMaxGateParams] = {0, 0, 0};
      for (int j = 0; j < p.n_params; ++j) q[j] = op.params[j].value;
      kern::gate_block<double>(op.gate, q, blk);
      for (int e = 0; e < dim * dim; ++e) {
        parts.fixed_blocks.push_back(blk[e].re);
        parts.fixed_blocks.push_back(blk[e].im);
      }
    }
  }
  p.mat_entry = parts.mat_entries;
  parts.mat_entries += std::size_t(dim) * dim;
  p.dmat_entry = parts.dmat_entries;
  parts.dmat_entries += std::size_t(dim) * dim * p.n_params;
  return p;
}

}  // namespace

void set_circuit_sizes(Plan& plan, const Circuit& circuit, const CompileOptions& options) {
  plan.n = circuit.n_qubits();
  plan.dim = std::uint64_t{1} << plan.n;
  plan.n_inputs = circuit.n_inputs();
  plan.n_weights = circuit.n_weights();
  plan.precision = options.precision;
  if (options.num_threads < 0) throw Error("num_threads must be >= 0 (0 = OpenMP default)");
  plan.num_threads = options.num_threads;
}

Plan build_plan(const Circuit& circuit, const CompileOptions& options) {
  Plan plan(circuit);
  set_circuit_sizes(plan, circuit, options);

  // Memory: the adjoint sweep keeps two states per sample in flight.
  const double real_bytes = options.precision == Precision::complex64 ? 4.0 : 8.0;
  const double state_bytes = std::ldexp(2.0 * real_bytes, plan.n);
  const double phys = static_cast<double>(physical_memory_bytes());
  if (2.0 * state_bytes > phys) {
    throw Error("a " + std::to_string(plan.n) + "-qubit state needs " + gib(state_bytes) +
                " and the adjoint method two of them, but this machine has " + gib(phys) +
                " of memory");
  }

  SvPlanParts parts;
  for (const Operation& op : circuit.operations()) {
    const kern::OpDesc p = plan_op(op, plan.n, parts);
    // A block on 2^(n-k) groups: dim^2 complex multiply-adds (8 flops) per group.
    const double per = std::ldexp(8.0 * (1 << 2 * p.site.kt), plan.n - p.site.k_all);
    plan.flops_forward += per;
    plan.flops_adjoint += per * (2 + p.n_params);  // psi and lam undone, a sandwich per parameter
    parts.ops.push_back(p);
  }

  long long col = 0;
  for (const Measurement& m : circuit.measurements()) {
    if (m.kind == Measurement::Kind::Expval) ++plan.n_expvals;
  }
  col = plan.n_expvals;
  for (const Measurement& m : circuit.measurements()) {
    if (m.kind == Measurement::Kind::Expval) {
      parts.term_begin.push_back(static_cast<int>(parts.terms.size()));
      for (const auto& [coef, word] : m.observable.terms) {
        kern::TermDesc t{coef, {}};
        for (const auto& [letter, wire] : word.factors) {
          const std::uint64_t bit = std::uint64_t{1} << kern::bit_of_wire(plan.n, wire);
          if (letter == 'X' || letter == 'Y') t.masks.x |= bit;
          if (letter == 'Z' || letter == 'Y') t.masks.z |= bit;
          if (letter == 'Y') ++t.masks.ny;
        }
        parts.terms.push_back(t);
      }
    } else {
      parts.probs_begin.push_back(static_cast<int>(parts.probs_pos.size()));
      for (int w : m.wires) parts.probs_pos.push_back(kern::bit_of_wire(plan.n, w));
      parts.probs_out.push_back(static_cast<int>(col));
      col += 1LL << m.wires.size();
      if (col > (1LL << 30)) throw Error("too many outputs: probabilities exceed 2^30 columns");
    }
  }
  parts.term_begin.push_back(static_cast<int>(parts.terms.size()));
  parts.probs_begin.push_back(static_cast<int>(parts.probs_pos.size()));
  plan.n_outputs = static_cast<int>(col);

  plan.amp = plan_amplitude_embedding(circuit);
  std::vector<PermCandidate> candidates;
  for (const kern::OpDesc& op : parts.ops) {
    candidates.push_back({op.site, op.fixed >= 0 ? parts.fixed_blocks.data() + 2 * std::size_t(op.fixed) : nullptr});
  }
  const std::vector<int> run_of = find_perm_runs(plan.n, candidates, parts.perm);
  for (std::size_t k = 0; k < parts.ops.size(); ++k) parts.ops[k].run = run_of[k];
  parts.n_diag_runs = mark_diag_runs(parts.ops, parts.fixed_blocks);
  pack_sv_plan(plan, parts);
  return plan;
}

}  // namespace qfleet::detail
