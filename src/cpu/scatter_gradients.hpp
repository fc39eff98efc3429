// The last step of both circuit executors' adjoint tile (sv_cpu_impl.hpp,
// dm_cpu_impl.hpp): each parameter slot's gradient, times its scale, added to the
// input or weight it reads, per sample, or into the tile's partial sums when the
// weights are shared (summed over tiles in tile order afterwards: deterministic).
// Compiled per instruction set with the executors.
#pragma once

#include <cstddef>

#include "kernels/sv_plan.hpp"

namespace qfleet::cpu::QFLEET_KERN_ISA {

// `gslot`: [n_params][L] slot gradients of lanes 0 .. nvalid-1 (samples b0 ..);
// `partials`: [n_tiles][n_weights] or null. Plan: kern::SvPlan or kern::DmPlan.
template <class R, int L, class Plan>
inline void scatter_slot_gradients(const Plan& kp, const kern::SvCall<R>& c, const R* gslot, R* partials,
                                   std::size_t tile, std::size_t b0, int nvalid) {
  if (c.grad_inputs) {
    for (int l = 0; l < nvalid; ++l) {
      R* gx = c.grad_inputs + (b0 + l) * kp.n_inputs;
      for (int i = 0; i < kp.n_inputs; ++i) gx[i] = 0;
    }
  }
  R* part = partials ? partials + tile * kp.n_weights : nullptr;
  if (part) {
    for (int i = 0; i < kp.n_weights; ++i) part[i] = 0;
  }
  if (c.grad_weights && !c.reduce_weights) {
    for (int l = 0; l < nvalid; ++l) {
      R* gw = c.grad_weights + (b0 + l) * kp.n_weights;
      for (int i = 0; i < kp.n_weights; ++i) gw[i] = 0;
    }
  }
  for (int s = 0; s < kp.n_params; ++s) {
    const kern::ParamDesc& p = kp.params[s];
    if (p.kind == kern::kParamConstant) continue;
    const R sc = static_cast<R>(p.scale);
    for (int l = 0; l < nvalid; ++l) {
      const R g = sc * gslot[s * L + l];
      if (p.kind == kern::kParamInput) {
        if (c.grad_inputs) c.grad_inputs[(b0 + l) * kp.n_inputs + p.index] += g;
      } else if (c.grad_weights) {
        if (part) {
          part[p.index] += g;
        } else {
          c.grad_weights[(b0 + l) * kp.n_weights + p.index] += g;
        }
      }
    }
  }
}

}  // namespace qfleet::cpu::QFLEET_KERN_ISA
