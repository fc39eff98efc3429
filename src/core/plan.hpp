// The compiled form of a circuit: everything validated and precomputed once, so a
// call only reads it. Shared (immutable) by every Program copy and every thread.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/types.hpp"
#include "qfleet/program.hpp"

namespace qfleet::detail {

struct OpPlan {
  Gate gate;
  kern::GateSite site;
  int dim = 2;          // block dimension 2^kt
  int n_params = 0;
  int first_param = 0;  // index into Plan::params
  bool reads_inputs = false;
  bool reads_weights = false;
  int fixed = -1;       // index into Plan::fixed_blocks when the block is constant
  // Offsets (in matrix entries) of this op's block and its derivative blocks in
  // the per-call matrix buffers; derivatives only for non-constant parameters.
  std::size_t mat_entry = 0;
  std::size_t dmat_entry = 0;
  // Per-sample under this weight mode (index 0: shared weights, 1: per-sample weights).
  bool per_sample[2] = {false, false};
};

struct ExpvalTerm {
  double coef;
  kern::PauliMasks masks;
};

struct ProbsPlan {
  std::vector<int> pos;  // bit positions, most significant outcome bit first
  int out_offset = 0;
};

struct AmpEmbedPlan {
  bool active = false;
  int first_input = 0, n_features = 0;
  bool normalize = false;
  double pad = 0.0;
  std::vector<std::uint64_t> index;  // basis index of embedded amplitude j (2^k entries)
};

struct Resident;  // core/backend.hpp

struct Plan {
  explicit Plan(const Circuit& c) : circuit(c) {}
  Circuit circuit;
  int n = 0;
  std::uint64_t dim = 0;  // 2^n
  int n_inputs = 0, n_weights = 0, n_outputs = 0, n_expvals = 0;
  Precision precision = Precision::complex128;
  int num_threads = 0;
  int isa = 0;  // index into the cpu backend's ISA table
  Device device = Device::cpu;               // as asked at compile time
  std::shared_ptr<const Resident> resident;  // the device copy (cuda, or automatic with a GPU)
  std::vector<OpPlan> ops;
  std::vector<Param> params;                            // all gate parameters, in op order
  std::vector<std::complex<double>> fixed_blocks;       // dim^2 entries per fixed op
  std::vector<ProbsPlan> probs;
  // Measurements flattened for the kernels.
  std::vector<ExpvalTerm> flat_terms;
  std::vector<int> term_begin;  // n_expvals + 1
  std::vector<int> flat_probs_pos;
  std::vector<int> probs_begin;  // probs.size() + 1
  std::vector<int> probs_out;
  AmpEmbedPlan amp;
  // Estimated real FLOPs per sample (forward; adjoint sweep extra), for the thread count.
  double flops_forward = 0, flops_adjoint = 0;
  std::size_t mat_entries = 0;   // total entries of all op blocks
  std::size_t dmat_entries = 0;  // total entries of all derivative blocks
};

Plan build_plan(const Circuit& circuit, const CompileOptions& options);

// Bytes of physical memory (for "will it fit" checks).
std::size_t physical_memory_bytes();
// "1.5 GiB": sizes in "will not fit" messages.
std::string gib(double bytes);

}  // namespace qfleet::detail
