// Plain data shared by the kernels and the planner (no functions, so one
// definition serves every instruction set).
#pragma once

#include <cstdint>

// Function templates in the kernel headers live in an ISA-specific inline
// namespace: each per-ISA translation unit defines QFLEET_KERN_ISA before including
// them, so no instantiation compiled for AVX-512 can be picked by the linker for a
// baseline caller.
#ifndef QFLEET_KERN_ISA
#define QFLEET_KERN_ISA generic
#endif

namespace qfleet::kern {

// Bit position of wire w in an n-qubit basis index (wire 0 = most significant).
constexpr int bit_of_wire(int n, int w) { return n - 1 - w; }

// Where a gate lands in the state: computed once at compile time.
struct GateSite {
  int k_all = 0;            // wires incl. controls
  int kt = 0;               // target wires (block is 2^kt square)
  int pos[3] = {0, 0, 0};   // bit positions of all wires, ascending
  std::uint64_t ctrl = 0;   // mask with every control bit set
  std::uint64_t off[8] = {};  // offset of local index r (first target most significant)
};

// A Pauli word as masks over bit positions: P|i> = i^ny (-1)^popcount(i & z) |i ^ x>,
// with x = X|Y positions, z = Z|Y positions (Y = i X Z per qubit).
struct PauliMasks {
  std::uint64_t x = 0, z = 0;
  int ny = 0;
};

}  // namespace qfleet::kern
