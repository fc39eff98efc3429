// The cpu backend's seam. Kernels are compiled once per instruction set
// (statevector_cpu_{baseline,avx2,avx512}.cpp all include statevector_cpu_impl.hpp)
// and picked at run time; everything here is plain data so the per-ISA code never
// instantiates a std:: template that another ISA's object could also emit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/plan.hpp"

namespace qfleet::cpu {

// Raw view of a detail::Plan for the per-ISA kernels.
struct KernelPlan {
  int n = 0;
  std::uint64_t dim = 0;
  int n_inputs = 0, n_weights = 0, n_outputs = 0, n_expvals = 0;
  const detail::OpPlan* ops = nullptr;
  int n_ops = 0;
  const Param* params = nullptr;
  int n_params = 0;
  const double* fixed_blocks = nullptr;  // interleaved re, im
  const detail::ExpvalTerm* terms = nullptr;
  const int* term_begin = nullptr;  // n_expvals + 1 offsets into terms
  const int* probs_pos = nullptr;   // concatenated bit positions
  const int* probs_begin = nullptr;  // n_probs + 1 offsets into probs_pos
  const int* probs_out = nullptr;    // output column of each probs block
  int n_probs = 0;
  bool amp = false;
  int amp_first_input = 0, amp_n_features = 0, amp_len = 0;
  bool amp_normalize = false;
  double amp_pad = 0.0;
  const std::uint64_t* amp_index = nullptr;
  std::size_t mat_entries = 0, dmat_entries = 0;
};

// One batched call. Pointers that are null switch the matching work off.
template <class R>
struct Call {
  std::size_t batch = 0;
  const R* inputs = nullptr;   // [batch, n_inputs]
  const R* weights = nullptr;  // [n_weights] or [batch, n_weights]
  bool weights_per_sample = false;
  R* outputs = nullptr;         // [batch, n_outputs]
  const R* cotangents = nullptr;  // [batch, n_outputs]: present = run the adjoint sweep
  R* grad_inputs = nullptr;     // [batch, n_inputs]
  R* grad_weights = nullptr;    // [n_weights] (reduced) or [batch, n_weights]
  bool reduce_weights = true;   // sum weight gradients over the batch
  R* states = nullptr;          // [batch, dim] interleaved complex
  const int* extra_probs_pos = nullptr;  // probabilities over these bit positions ...
  int extra_probs_k = 0;
  R* extra_probs = nullptr;     // ... into [batch, 2^k] (used by sampling)
  // Execution shape chosen by the caller: tile width (the ISA's lanes, or 1) and
  // whether kernels split one state's amplitudes across threads.
  int lanes = 1;
  bool amplitude_parallel = false;
  int threads = 1;
  R* work = nullptr;            // scratch from workspace_reals()
  std::size_t work_per_thread = 0;
};

struct IsaKernels {
  const char* name;
  int lanes_f32, lanes_f64;
  void (*run_f32)(const KernelPlan&, const Call<float>&);
  void (*run_f64)(const KernelPlan&, const Call<double>&);
  // Scratch the run needs: shared part + per-thread part, in reals.
  std::size_t (*shared_reals)(const KernelPlan&, int lanes, bool adjoint);
  std::size_t (*thread_reals)(const KernelPlan&, int lanes, bool adjoint, int extra_probs_k);
};

// ISAs compiled into this build, best first; unsupported ones are filtered at run time.
const std::vector<IsaKernels>& isa_table();
// Index into isa_table() for a name ("auto" = best supported); throws qfleet::Error.
int select_isa(const std::string& name);

KernelPlan kernel_view(const detail::Plan& plan);

// Runs a call on the plan's ISA, choosing tile width, threading and workspace.
template <class R>
void execute(const detail::Plan& plan, Call<R> call);

}  // namespace qfleet::cpu
