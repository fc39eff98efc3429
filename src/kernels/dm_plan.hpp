// A compiled density-matrix circuit as plain data, read by the density-matrix
// executors (cpu/dm_cpu_impl.hpp). C++17 and no std containers, like sv_plan.hpp.
//
// The density matrix rho of n qubits is held as a vector of 4^n amplitudes,
// entry (i, j) at index (i << n) | j: a 2n-bit index whose high n bits are the row
// and low n bits the column (wire w's row bit is at position 2n-1-w, its column bit
// at n-1-w). In that form a gate U is U on the row bits and conj(U) on the column
// bits, a channel is its superoperator on its wires' row and column bits, and every
// operation is a small dense block on a few index bits, applied by the same loop
// over groups as a state-vector gate (kernels/dm_ops.hpp). This is the
// vectorised-density-matrix method of Qiskit Aer's density-matrix simulator.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/sv_plan.hpp"
#include "kernels/types.hpp"
#include "qfleet/channels.hpp"
#include "qfleet/gates.hpp"

namespace qfleet::kern {

// Where a block lands in the 2n-bit index: like GateSite, with up to four bits
// (a two-wire channel's row and column bits; a Toffoli's three row bits).
struct DmSite {
  int k_all = 0;             // bits incl. controls
  int kt = 0;                // target bits (block is 2^kt square)
  int pos[4] = {0, 0, 0, 0};  // bit positions of all bits, ascending
  std::uint64_t ctrl = 0;    // control bits set
  std::uint64_t off[16] = {};  // offset of local index r (first target most significant)
};

enum DmOpKind : std::uint8_t { kDmGate = 0, kDmChannel = 1 };

struct DmOp {
  std::uint8_t kind = kDmGate;
  Gate gate = Gate::Identity;
  Channel channel = Channel::None;
  DmSite row, col;  // gates: U on the row bits, conj(U) on the column bits
  DmSite sup;       // channels: the superoperator on row and column bits together
  int dim = 0;      // block dimension: 2^kt of a gate's U, 4 or 16 for a superoperator
  // A one-wire catalogue channel: its superoperator is real and only mixes the
  // populations (rho00, rho11) and the coherences (rho01, rho10) among themselves
  // (kernels/channel_matrix.hpp), so 8 of its 16 entries are applied.
  bool population_coherence = false;
  int n_params = 0;
  int first_param = 0;     // into DmPlan::params
  int fixed = -1;          // entry offset into DmPlan::fixed_blocks when the block is constant
  std::uint8_t reads = 0;  // ParamReads of its parameters
  int slot = -1;           // index among the ops with a non-constant parameter (stored states)
  std::size_t mat_entry = 0;   // entry offset of this op's block in a tile's block buffer
  std::size_t dmat_entry = 0;  // entry offset of its derivative blocks (one per parameter)
  // The block is exactly X (PauliX, CNOT, Toffoli): applied as a swap of amplitudes.
  bool x_block = false;
  int run = -1;  // the PermRun holding this gate (CircuitPlan::perm_runs; maps of the n-qubit basis), or -1
};

// The fields both plans share (kernels/sv_plan.hpp's CircuitPlan; here the terms are
// over the n-bit row/column index with readout error already folded in, docs/noisy.md),
// and what density matrices add.
struct DmPlan : CircuitPlan {
  std::uint64_t dim2 = 0;  // 4^n
  int n_purity = 0;
  const DmOp* ops = nullptr;
  int n_slots = 0;                   // ops with a non-constant parameter
  const int* probs_wire = nullptr;   // the wires of probs_pos (readout matrices)
  int max_probs_k = 0;               // widest probs block (or sampled wires), for scratch
  int purity_out = 0;                // first purity column
  const double* readout = nullptr;   // [n][4] row-major A[i][j] = P(read i | true j); null: none
};

// Stored states for the adjoint sweep: the ops of a call are cut into segments of at
// most `per_segment` ops with a non-constant parameter; the state at each segment's
// start is kept (checkpoints) and a segment is recomputed from it before its reverse
// sweep, so memory is (segments + per_segment) states instead of one per op
// (Griewank's checkpointing; one segment = no recomputation).
struct DmSegments {
  int count = 1;
  int per_segment = 0;
  const int* begin = nullptr;  // count + 1 op indices
};

}  // namespace qfleet::kern
