// A compiled circuit as plain data, the one form every executor reads: the cpu
// tiles (cpu/sv_cpu_impl.hpp), the group and lanes bodies
// (kernels/sv_group.hpp, sv_lanes.hpp). Every array is a raw pointer into one
// contiguous blob (core/sv_pack.cpp), so the same struct views the plan in host
// memory (the cpu executor) and in device memory (the cuda backend uploads the
// blob once, at compile time). C++17 and no std containers, so nvcc reads it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/hd.hpp"
#include "kernels/types.hpp"
#include "qfleet/gates.hpp"

namespace qfleet::kern {

// qfleet::Param::Kind as the kernels name it (sv_pack.cpp static_asserts the values match).
enum ParamKind : std::uint8_t { kParamConstant = 0, kParamInput = 1, kParamWeight = 2 };

// One gate parameter's source (mirrors qfleet::Param without its constructors).
struct ParamDesc {
  std::uint8_t kind = kParamConstant;  // a ParamKind
  int index = 0;
  double value = 0.0;
  double scale = 1.0;
};

// What an op's parameters read (OpDesc::reads, a bit set).
enum ParamReads : std::uint8_t { kReadsInputs = 1, kReadsWeights = 2 };

struct OpDesc {
  Gate gate = Gate::Identity;
  GateSite site;
  int n_params = 0;
  int first_param = 0;  // index into SvPlan::params
  int fixed = -1;       // entry offset into SvPlan::fixed_blocks when the block is constant
  std::uint8_t reads = 0;  // ParamReads of its parameters
  // Entry offsets of this op's block and of its derivative blocks (one per
  // parameter) in a buffer holding every op's: the cpu tiles precompute blocks.
  std::size_t mat_entry = 0, dmat_entry = 0;
  int run = -1;  // the PermRun holding this op (CircuitPlan::perm_runs), or -1
  // The run of consecutive diagonal gates holding this op (ops diag_first..diag_last),
  // or -1: the circuit group body applies such a run amplitude by amplitude, one
  // barrier for all of them (kernels/sv_group.hpp's group_diagonal_run).
  int diag_first = -1, diag_last = -1;
};

// A run of consecutive constant gates whose blocks have one nonzero per column (CNOT,
// SWAP, X, Y, Z, S, T, CZ, Toffoli, ...: phased permutations), fused into one
// phased permutation of the n-qubit basis: the run maps basis state i to pi(i) times
// phase_i. The group body (kernels/sv_group.hpp) applies it in one gather and two
// barriers where its gates take a barrier each, the register body
// (kernels/sv_lanes.hpp) in one shuffle a state, the density-matrix group body
// (kernels/dm_group.hpp) on rows and columns at once; the cpu executors apply the gates.
struct PermRun {
  int first = 0, last = 0;  // ops first..last, inclusive
  // perm_index + index: src[dim] (src[j] = pi^-1(j)), then dst[dim] (dst[i] = pi(i)).
  std::size_t index = 0;
  // perm_phase + 2 * phase: phase_i as interleaved re, im [dim]; -1 when every phase is 1.
  std::int64_t phase = -1;
};

struct TermDesc {
  double coef = 0.0;
  PauliMasks masks;
};

// What both circuit plans hold (SvPlan below, kernels/dm_plan.hpp's DmPlan): sizes,
// parameter sources, constant blocks, measured terms and positions, the amplitude
// embedding, the block buffers' sizes; each plan adds its ops and what only it needs.
struct CircuitPlan {
  int n = 0;
  std::uint64_t dim = 0;  // 2^n
  int n_inputs = 0, n_weights = 0, n_outputs = 0, n_expvals = 0;
  int n_ops = 0;
  const ParamDesc* params = nullptr;
  int n_params = 0;
  const double* fixed_blocks = nullptr;  // interleaved re, im
  const TermDesc* terms = nullptr;       // expectation values' Pauli terms
  const int* term_begin = nullptr;       // n_expvals + 1
  const int* probs_pos = nullptr;        // bit positions, most significant outcome bit first
  const int* probs_begin = nullptr;      // n_probs + 1
  const int* probs_out = nullptr;        // output column of each probs block
  int n_probs = 0;
  bool amp = false;
  int amp_first_input = 0, amp_n_features = 0, amp_len = 0;
  bool amp_normalize = false;
  double amp_pad = 0.0;
  const std::uint64_t* amp_index = nullptr;       // basis index of embedded amplitude j
  std::size_t mat_entries = 0, dmat_entries = 0;  // sizes of the block buffers (entries)
  // Fused runs of phased permutations (PermRun), their ops marked by their `run`.
  const PermRun* perm_runs = nullptr;
  int n_perm_runs = 0;
  const std::uint32_t* perm_index = nullptr;
  const double* perm_phase = nullptr;
};

struct SvPlan : CircuitPlan {
  const OpDesc* ops = nullptr;
  const int* probs_sorted = nullptr;  // probs_pos ascending within each block
  int n_diag_runs = 0;                // runs of diagonal gates (OpDesc::diag_first)
};

// The planner fuses runs of at least kMinPermRun such gates (the fused run takes two
// barriers) on at most kMaxPermQubits qubits (its maps take 24 bytes an amplitude).
constexpr int kMinPermRun = 3;
constexpr int kMaxPermQubits = 12;
// A run of diagonal gates (RZ, PhaseShift, CRZ, ControlledPhaseShift, IsingZZ, Z, S, T,
// CZ, a diagonal QubitUnitary) takes one barrier where its gates take one each: two
// already save one. Its gates keep their parameters and gradients.
constexpr int kMinDiagRun = 2;
// Whether a group applies a plan's `runs` of diagonal gates fused: it reads their entries
// from its block table (`table`), and its barrier is a block's (`block_barrier`; a warp's
// saves little: kernels/sv_group.hpp's warp_synchronous). The body's rule, and what
// Program::execution reports.
QFLEET_HD inline bool diag_runs_fused(int runs, bool table, bool block_barrier) {
  return runs > 0 && table && block_barrier;
}
// Amplitudes (a density matrix's entries) a group member stages in registers to apply
// a run: a gather in place needs every read done before any write, so the group bodies
// apply a run fused only where the group holds the state in that many rounds, and its
// gates one by one elsewhere. More rounds would take more registers.
constexpr int kPermPerMember = 4;
constexpr int kDmPermPerMember = 8;

// Whether a group of `threads` applies a plan's `runs` fused to a state of `entries`
// amplitudes (2^n; a density matrix's 4^n entries), staging `per_member` each: the
// bodies' rule, and what Program::execution reports.
QFLEET_HD inline bool perm_runs_fused(int runs, std::uint64_t entries, int per_member, int threads) {
  return runs > 0 && entries <= std::uint64_t(per_member) * std::uint64_t(threads);
}

constexpr int kMaxSampleWires = 26;
// Target wires of one gate's block in the GPU bodies (kernels/sv_group.hpp,
// kernels/sv_lanes.hpp) and the cpu tiles: the catalogue's gates and QubitUnitary
// have at most two (controls excluded); the planner refuses anything else, so they hold
// 4 x 4 blocks at most (no dead 8 x 8 path holding registers or stack).
constexpr int kMaxBlockTargets = 2;

// One batched call. Null pointers switch the matching work off.
template <class R>
struct SvCall {
  std::size_t batch = 0;
  const R* inputs = nullptr;
  const R* weights = nullptr;
  bool weights_per_sample = false;
  R* outputs = nullptr;
  const R* cotangents = nullptr;  // present: run the adjoint sweep
  R* grad_inputs = nullptr;
  R* grad_weights = nullptr;      // [n_weights] (reduced, zeroed by the caller) or [batch, n_weights]
  bool reduce_weights = true;
  R* states = nullptr;            // [batch, dim] interleaved complex
  // [batch, dim] final states saved by an earlier forward call (Program::vjp_saved):
  // the adjoint sweep starts from them instead of running the forward sweep (cpu only).
  const R* resume = nullptr;
  // Probabilities over extra bit positions (sampling): [batch, 2^extra_k].
  int extra_k = 0;
  int extra_pos[kMaxSampleWires] = {};
  int extra_sorted[kMaxSampleWires] = {};
  R* extra_probs = nullptr;
};

// The call's buffers by role, in the one order both sides of the device seam walk: the host
// (their sizes and the staging list: core/program.cpp) and the device backend (the staged
// copies put in their place: cuda/cuda_backend.cpp). for_each_buffer(call, f) calls
// f(role, field, is_output) for each pointer field; field is a reference to the member.
enum class SvBuffer : int { inputs, weights, outputs, cotangents, grad_inputs, grad_weights, states, extra_probs };
inline constexpr int kSvBuffers = 8;

template <class Call, class F>  // Call: SvCall<R> or const SvCall<R>
void sv_buffers(Call& c, F&& f) {
  f(SvBuffer::inputs, c.inputs, false);
  f(SvBuffer::weights, c.weights, false);
  f(SvBuffer::outputs, c.outputs, true);
  f(SvBuffer::cotangents, c.cotangents, false);
  f(SvBuffer::grad_inputs, c.grad_inputs, true);
  f(SvBuffer::grad_weights, c.grad_weights, true);
  f(SvBuffer::states, c.states, true);
  f(SvBuffer::extra_probs, c.extra_probs, true);
}
template <class R, class F>
void for_each_buffer(SvCall<R>& c, F&& f) {
  sv_buffers(c, f);
}
template <class R, class F>
void for_each_buffer(const SvCall<R>& c, F&& f) {
  sv_buffers(c, f);
}

}  // namespace qfleet::kern
