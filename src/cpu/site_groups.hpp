// Amplitude groups of a gate or channel site, for the cpu executors (state vector
// and density matrix), compiled once per instruction set like the files that
// include it (QFLEET_KERN_ISA defined first).
#pragma once

#include <omp.h>

#include <cstdint>

#include "kernels/statevector.hpp"

namespace qfleet::cpu::QFLEET_KERN_ISA {

// f(base) for every group of a site over `amplitudes` amplitudes: base = the group's
// index with zeros at the site's bits, plus its control bits. Consecutive bases come
// from the "increment over the free bits" step next = ((cur | M) + 1) & ~M (M = the
// site's bits): three instructions per group instead of inserting k zero bits (the
// inner work of a small block is only a few loads and multiplies). par > 0 splits
// the groups across that many threads.
template <class Site, class F>
inline void site_groups(const Site& site, std::uint64_t amplitudes, int par, F&& f) {
  std::uint64_t mask = 0;
  for (int i = 0; i < site.k_all; ++i) mask |= std::uint64_t{1} << site.pos[i];
  const std::uint64_t ng = amplitudes >> site.k_all;
  auto run = [&](std::uint64_t g0, std::uint64_t g1) {
    std::uint64_t cur = kern::insert_zero_bits(g0, site.pos, site.k_all);
    for (std::uint64_t g = g0; g < g1; ++g) {
      f(cur | site.ctrl);
      cur = ((cur | mask) + 1) & ~mask;
    }
  };
  if (par > 0) {
#pragma omp parallel num_threads(par)
    {
      const std::uint64_t nt = static_cast<std::uint64_t>(omp_get_num_threads());
      const std::uint64_t t = static_cast<std::uint64_t>(omp_get_thread_num());
      run(ng * t / nt, ng * (t + 1) / nt);
    }
  } else {
    run(0, ng);
  }
}

}  // namespace qfleet::cpu::QFLEET_KERN_ISA
