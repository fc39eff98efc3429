// Open-system models: a d-level system with piecewise-constant controls and
// Lindblad jump operators, simulated for a whole batch of tasks per call with
// exact reverse-mode gradients.
//
//   H(t) = H0 + sum_m c_m H0_m + sum_k u_k(t) H_k
//   d rho/dt = -i[H, rho] + sum_j gamma_j (L_j rho L_j^dag - {L_j^dag L_j, rho}/2)
//
// c_m (drift coefficients), gamma_j (rates) and u_k (amplitudes over n_seg
// segments) are given per task or shared. Closed systems (no jump operators) run on
// state vectors and unitaries; open systems on density matrices and
// superoperators (column-stacking vec: vec(A X B) = (B^T kron A) vec(X)).
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qfleet/solver.hpp"
#include "qfleet/program.hpp"

namespace qfleet {

using Complex = std::complex<double>;
using ComplexMatrix = std::vector<Complex>;  // row-major d x d
using ComplexVector = std::vector<Complex>;

class OpenSystem {
 public:
  explicit OpenSystem(int dim);

  // --- Hamiltonian and dissipation. Matrices are d x d, row-major, checked
  // Hermitian (Hamiltonians) and finite; every call validates before changing anything.
  OpenSystem& drift(const ComplexMatrix& h0);         // H0 (default 0)
  OpenSystem& drift_term(const ComplexMatrix& h);     // H0_m, scaled by the per-task c_m
  OpenSystem& control(const ComplexMatrix& h);        // H_k, scaled by the amplitude u_k
  OpenSystem& jump(const ComplexMatrix& l);           // L_j, with rate gamma_j >= 0

  // --- time grid: n_seg segments of equal length, or given durations (> 0).
  OpenSystem& segments(int n_seg, double total_time);
  OpenSystem& durations(const std::vector<double>& dt);

  // --- what is propagated. One of: a density matrix, a pure state (shared by all
  // tasks unless per-task initial states are passed at call time), or the whole
  // propagator (the channel's superoperator / the unitary) for gate problems.
  OpenSystem& initial_density(const ComplexMatrix& rho0);
  OpenSystem& initial_state(const ComplexVector& psi0);
  OpenSystem& propagate_gate();

  // --- what is measured.
  OpenSystem& target_state(const ComplexVector& psi);    // F = <psi|rho|psi>
  OpenSystem& target_density(const ComplexMatrix& rho);  // Uhlmann F = (tr sqrt(sqrt(rho) sigma sqrt(rho)))^2
  OpenSystem& target_unitary(const ComplexMatrix& u);    // average gate fidelity (d F_pro + 1)/(d + 1)
  OpenSystem& observable(const ComplexMatrix& o);        // <O> at every segment boundary (Hermitian)
  OpenSystem& computational_subspace(const std::vector<int>& levels);  // leakage out of these levels

  enum class Initial : std::uint8_t { Density, Pure, Gate };
  enum class Target : std::uint8_t { None, Pure, Mixed, Unitary };

  int dim() const { return dim_; }
  int n_segments() const { return static_cast<int>(durations_.size()); }
  int n_controls() const { return static_cast<int>(controls_.size()); }
  int n_drift_terms() const { return static_cast<int>(drift_terms_.size()); }
  int n_jumps() const { return static_cast<int>(jumps_.size()); }
  int n_observables() const { return static_cast<int>(observables_.size()); }
  bool closed() const { return jumps_.empty(); }
  Initial initial_kind() const { return initial_kind_; }
  Target target_kind() const { return target_kind_; }
  const ComplexMatrix& h0() const { return h0_; }
  const std::vector<ComplexMatrix>& drift_terms() const { return drift_terms_; }
  const std::vector<ComplexMatrix>& controls() const { return controls_; }
  const std::vector<ComplexMatrix>& jumps() const { return jumps_; }
  const std::vector<double>& segment_durations() const { return durations_; }
  const ComplexMatrix& initial_density_matrix() const { return rho0_; }
  const ComplexVector& initial_pure_state() const { return psi0_; }
  const ComplexVector& target_pure_state() const { return target_psi_; }
  const ComplexMatrix& target_matrix() const { return target_mat_; }
  const std::vector<ComplexMatrix>& observables() const { return observables_; }
  const std::vector<int>& subspace() const { return subspace_; }

 private:
  ComplexMatrix checked_matrix(const ComplexMatrix& m, std::string_view what, bool hermitian) const;

  int dim_;
  ComplexMatrix h0_;
  std::vector<ComplexMatrix> drift_terms_, controls_, jumps_, observables_;
  std::vector<double> durations_;
  Initial initial_kind_ = Initial::Pure;
  ComplexMatrix rho0_;
  ComplexVector psi0_;
  Target target_kind_ = Target::None;
  ComplexVector target_psi_;
  ComplexMatrix target_mat_;
  std::vector<int> subspace_;
};


enum class OpenForm : std::uint8_t { automatic, superoperator, lindblad };
// How the exact solver computes X_k = exp(dt A) X_{k-1} (docs/open_systems.md#solvers).
enum class ExactMethod : std::uint8_t { automatic, propagator, action };

struct OpenCompileOptions {
  Precision precision = Precision::complex128;
  Solver solver = Solver::exact;
  double dt = 0.0;     // rk4/euler step (each segment takes ceil(duration/dt) equal steps)
  double rtol = 1e-8;  // dopri5/tsit5 error control (Dormand & Prince 1980; Tsitouras 2011)
  double atol = 1e-10;
  int num_threads = 0;
  // The cpu kernels' instruction set, as CompileOptions::isa: "automatic" (the best this
  // machine runs, or QFLEET_ISA) | "avx512" | "avx2" | "baseline".
  std::string isa = "automatic";
  // cpu; cuda (the plan is uploaded to the current CUDA device now and every call
  // runs there: a thread per task, one launch per call); automatic (uploaded when a
  // GPU is visible, then each call on host data goes where the cost model of
  // docs/architecture.md expects it to be faster; calls on device data run on the GPU).
  Device device = Device::cpu;
  // How the step solvers (rk4, euler, dopri5, tsit5) apply an open system's generator:
  // superoperator (the dense d^2 x d^2 Liouvillian: d^4 per product, fastest for a
  // qubit or a qutrit), lindblad (H and the jump operators as sparse d x d matrices,
  // L(rho) = G rho + rho G^dag + sum gamma_j L_j rho L_j^dag: nnz * d per product, no
  // d^4 memory), or automatic (the cheaper by operation count; always lindblad when
  // the superoperators would not fit in memory). Closed systems and the exact solver
  // use the dense generator, unless the exact solver runs by its action.
  OpenForm form = OpenForm::automatic;
  // How the exact solver propagates: propagator (P_k = exp(dt A_k) by scaling and
  // squaring, n x n with n = d^2 open / d closed, for n <= 256), action (the action
  // of exp(dt A_k) on the state by Taylor steps, Al-Mohy & Higham 2011: products of
  // the generator with the state only, in Lindblad form for open systems where that
  // is cheaper), or automatic (the cheaper by the cost model; the action where the
  // propagator would exceed n = 256). Other solvers: must stay automatic.
  ExactMethod exact = ExactMethod::automatic;
};

// Arguments of one batched call (row-major). Each may be per task (leading batch
// dimension) or shared (without it); the length decides.
template <class R>
struct TaskArgs {
  std::size_t batch = 1;
  std::span<const R> amplitudes;    // [batch, n_seg, n_ctrl] or [n_seg, n_ctrl]
  std::span<const R> drift_coeffs;  // [batch, n_drift_terms] or [n_drift_terms]
  std::span<const R> rates;         // [batch, n_jumps] or [n_jumps]
  // Optional per-task initial states: [batch, d, d] densities or [batch, d] pure states.
  std::span<const std::complex<R>> initial;
  // Optional segment durations (> 0): [batch, n_seg] or [n_seg]; empty: the compiled grid.
  // rk4/euler take ceil(duration/dt) steps per segment, as with the compiled grid.
  std::span<const R> durations = {};
};

template <class R>
struct TaskOutputs {
  std::span<R> fidelity;                    // [batch] (needs a target)
  std::span<R> leakage;                     // [batch] (needs a computational subspace)
  std::span<R> expvals;                     // [batch, n_seg + 1, n_observables]
  std::span<std::complex<R>> final_state;   // [batch, d, d] density / [batch, d] pure state /
                                            // [batch, d^2, d^2] superoperator / [batch, d, d] unitary
};

// Cotangents of a reverse-mode call, one per output (any may be empty: zero). The
// gradients are those of the real scalar
//   L = sum_b (fidelity[b] F_b + leakage[b] leak_b + sum_{k,o} expvals[b,k,o] <O_o>_{b,k})
//       + Re sum conj(final_state) * final state,
// so a complex cotangent is dL/dRe + i dL/dIm (PyTorch's convention for complex
// tensors). Expectation values' cotangents enter at their segment boundaries; an open
// system's final-state cotangent counts by its Hermitian part (the states are Hermitian).
template <class R>
struct TaskCotangents {
  std::span<const R> fidelity;                    // [batch] (needs a target)
  std::span<const R> leakage;                     // [batch] (needs a computational subspace)
  std::span<const R> expvals;                     // [batch, n_seg + 1, n_observables]
  std::span<const std::complex<R>> final_state;   // like TaskOutputs::final_state
};

template <class R>
struct TaskGradients {
  std::span<R> amplitudes;    // like the amplitudes argument (summed over tasks when shared)
  std::span<R> drift_coeffs;  // like drift_coeffs
  std::span<R> rates;         // like rates
  // Like the durations argument; [n_seg] (summed over tasks) when it is shared or empty.
  std::span<R> durations = {};
  // Like the initial argument (needs per-task initial states), as a complex cotangent.
  std::span<std::complex<R>> initial = {};
};

namespace detail {
struct OpenPlan;
}

struct CacheStats {
  std::uint64_t propagators_computed = 0;  // matrix exponentials / step sequences evaluated
  std::uint64_t propagators_reused = 0;    // segments that reused an identical segment's propagator
  std::uint64_t calls = 0;
};

class OpenProgram {
 public:
  int dim() const;
  int n_segments() const;
  Precision precision() const;
  Solver solver() const;
  // How the generator is applied, as compiled (automatic resolved): superoperator
  // (also every closed system and the exact solver's propagator) or lindblad.
  OpenForm form() const;
  // How the exact solver runs (propagator or action); automatic for the step solvers.
  ExactMethod exact_method() const;
  const OpenSystem& system() const;
  std::size_t final_state_size() const;  // per task, in complex numbers
  CacheStats cache_stats() const;  // propagator counts cover calls run on the cpu
  Device device() const;             // as compiled
  std::string isa() const;           // the cpu kernels' instruction set (OpenCompileOptions::isa)
  int cuda_device() const;           // the CUDA device holding its copy; -1: none
  // Where and how a call on host data of this batch size runs, in words.
  std::string execution(std::size_t batch, bool adjoint = false) const;

  template <class R>
  void forward(const TaskArgs<R>& args, const TaskOutputs<R>& outputs) const;

  // Buffers may all be host memory or, on a program compiled for cuda/automatic, all
  // device memory: the call is then asynchronous on qfleet::cuda_stream() (no host
  // synchronisation; shapes are checked, values are not read on the host, and a task
  // whose dopri5 controller fails gets NaN fidelity and leakage).
  //
  // Reverse mode: gradients of the scalar TaskCotangents defines with respect to
  // amplitudes, drift coefficients, rates, segment durations and per-task initial
  // states (each gradient span may be empty: not computed), in one forward and one
  // reverse sweep. Forward outputs may be requested in the same pass.
  template <class R>
  void vjp(const TaskArgs<R>& args, const TaskCotangents<R>& cot, const TaskGradients<R>& grads,
           const TaskOutputs<R>& outputs = {}) const;
  // The fidelity and leakage cotangents alone.
  template <class R>
  void vjp(const TaskArgs<R>& args, std::span<const R> cot_fidelity, std::span<const R> cot_leakage,
           const TaskGradients<R>& grads, const TaskOutputs<R>& outputs = {}) const {
    vjp(args, TaskCotangents<R>{cot_fidelity, cot_leakage, {}, {}}, grads, outputs);
  }

  // Saved-state adjoint, for callers that run the forward and the backward pass as
  // two calls (autograd): forward() with `saved` also keeps, per simulated task, the
  // states at every segment boundary X_0 .. X_N and the adaptive solvers' first trial
  // step per segment (saved_size(batch) reals), and vjp_saved() then runs only the
  // reverse sweep from them, not the forward sweep again, so the two calls cost what
  // one fused vjp() does. Pass the same arguments to both calls; the gradients are
  // those of vjp(). saved_size() is 0 where a call cannot resume (programs with a GPU
  // copy): pass an empty `saved` there; vjp_saved() then runs vjp().
  std::size_t saved_size(std::size_t batch) const;
  template <class R>
  void forward(const TaskArgs<R>& args, const TaskOutputs<R>& outputs, std::span<R> saved) const;
  template <class R>
  void vjp_saved(const TaskArgs<R>& args, std::span<const R> saved, const TaskCotangents<R>& cot,
                 const TaskGradients<R>& grads) const;
  template <class R>
  void vjp_saved(const TaskArgs<R>& args, std::span<const R> saved, std::span<const R> cot_fidelity,
                 std::span<const R> cot_leakage, const TaskGradients<R>& grads) const {
    vjp_saved(args, saved, TaskCotangents<R>{cot_fidelity, cot_leakage, {}, {}}, grads);
  }

  explicit OpenProgram(std::shared_ptr<detail::OpenPlan> plan);

 private:
  std::shared_ptr<detail::OpenPlan> plan_;
};

OpenProgram compile(const OpenSystem& system, const OpenCompileOptions& options = {});

}  // namespace qfleet
