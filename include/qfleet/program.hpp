// Compile once, run many: a Program is a validated, planned circuit that runs a
// whole batch per call - forward, adjoint vector-Jacobian products (Jones & Gacon,
// arXiv:2009.02823), final states and samples. Programs are immutable and safe to
// call from several threads at once; per-thread workspaces are reused across
// calls, so a warm program allocates nothing in forward() or vjp().
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "qfleet/circuit.hpp"

namespace qfleet {

enum class Precision : std::uint8_t { complex64, complex128 };
enum class Device : std::uint8_t { cpu, cuda, automatic };
// automatic: density matrices when the circuit is noisy (Circuit::is_noisy), else
// state vectors. density_matrix runs a noiseless circuit as density matrices too.
enum class Simulator : std::uint8_t { automatic, statevector, density_matrix };

struct CompileOptions {
  Precision precision = Precision::complex128;
  // cpu; cuda (the plan is uploaded to the current CUDA device now, and every call
  // runs there); automatic (uploaded when a GPU is visible, then each call on host
  // data goes where the cost model in docs/architecture.md expects it to be faster,
  // and calls on device data run on the GPU).
  Device device = Device::cpu;
  int num_threads = 0;          // 0: OpenMP's default (OMP_NUM_THREADS or all cores)
  std::string isa = "automatic";  // "automatic" | "avx512" | "avx2" | "baseline"
  Simulator simulator = Simulator::automatic;
};

// Arguments of one batched call. Shapes (row-major):
//   inputs  [batch, n_inputs]                       (empty when n_inputs == 0)
//   weights [n_weights] shared, or [batch, n_weights] per sample
template <class R>
struct BatchArgs {
  std::size_t batch = 1;
  std::span<const R> inputs;
  std::span<const R> weights;
};

// Gradient outputs of vjp(). grad_weights has n_weights entries when weights are
// shared (summed over the batch) and batch * n_weights when they are per sample.
template <class R>
struct Gradients {
  std::span<R> inputs;   // [batch, n_inputs] or empty to skip
  std::span<R> weights;  // see above, or empty to skip
};

namespace detail {
struct Plan;
}

class Program {
 public:
  int n_qubits() const;
  int n_inputs() const;
  int n_weights() const;
  int n_outputs() const;
  Precision precision() const;
  std::string isa() const;  // the instruction set the kernels run with
  int lanes() const;        // samples per SIMD tile on the cpu backend
  const Circuit& circuit() const;
  Device device() const;  // as compiled
  // The CUDA device holding this program's copy (device buffers must live there);
  // -1 when it has none (device cpu, or automatic where no GPU was visible).
  int cuda_device() const;
  // Where and how a call on host data of this batch size runs, in words
  // (e.g. "cpu avx512: 8 samples per SIMD tile, ..." or "cuda block: 256 threads per circuit, ...").
  std::string execution(std::size_t batch, bool adjoint = false) const;

  // outputs [batch, n_outputs]: expectation values then probabilities, in the
  // order the measurements were added.
  template <class R>
  void forward(const BatchArgs<R>& args, std::span<R> outputs) const;

  // Vector-Jacobian product: given cotangents [batch, n_outputs], writes
  // sum_k cot[b,k] d out[b,k] / d(inputs, weights). One adjoint sweep per sample,
  // whatever n_outputs is. If outputs is non-empty the forward values are written
  // too (forward and backward fused in one pass).
  template <class R>
  void vjp(const BatchArgs<R>& args, std::span<const R> cotangents, const Gradients<R>& grads,
           std::span<R> outputs = {}) const;

  // Saved-state adjoint, for callers that run the forward and the backward pass as
  // two calls (autograd): forward() with `saved` also keeps the final states there
  // (saved_size(batch) reals), and vjp_saved() then runs only the reverse sweep from
  // them, not the forward sweep again, so the two calls cost what one fused vjp()
  // does. saved_size() is 0 where a call cannot resume (density-matrix programs,
  // programs with a GPU copy): pass an empty `saved` there; vjp_saved() then runs vjp().
  std::size_t saved_size(std::size_t batch) const;
  template <class R>
  void forward(const BatchArgs<R>& args, std::span<R> outputs, std::span<R> saved) const;
  template <class R>
  void vjp_saved(const BatchArgs<R>& args, std::span<const R> saved, std::span<const R> cotangents,
                 const Gradients<R>& grads) const;

  // Per-sample Jacobians: jac_inputs [batch, n_outputs, n_inputs] and
  // jac_weights [batch, n_outputs, n_weights] (per sample even for shared weights).
  template <class R>
  void jacobian(const BatchArgs<R>& args, std::span<R> jac_inputs, std::span<R> jac_weights) const;

  // Final states [batch, 2^n] (state-vector programs).
  template <class R>
  void states(const BatchArgs<R>& args, std::span<std::complex<R>> out) const;

  // Final density matrices [batch, 2^n, 2^n] row-major (density-matrix programs;
  // readout errors do not apply: they act on measured bits).
  template <class R>
  void density_matrices(const BatchArgs<R>& args, std::span<std::complex<R>> out) const;

  // Which simulator compile() chose (never automatic).
  Simulator simulator() const;

  // shots samples per batch element, measured on `wires` (empty = all wires), with
  // the circuit's readout errors on those wires;
  // each sample is the outcome index (first wire most significant). Reproducible:
  // element b draws from its own stream derived from (seed, b), whatever the
  // thread count.
  template <class R>
  void sample(const BatchArgs<R>& args, const std::vector<int>& wires, std::size_t shots,
              std::uint64_t seed, std::span<std::uint64_t> out) const;

  // Convenience forms that allocate their results.
  template <class R>
  std::vector<R> forward(const BatchArgs<R>& args) const;

  explicit Program(std::shared_ptr<const detail::Plan> plan);

 private:
  template <class R>
  void vjp_call(const BatchArgs<R>& args, std::span<const R> cotangents, const Gradients<R>& grads,
                std::span<R> outputs, const R* resume) const;

  std::shared_ptr<const detail::Plan> plan_;
};

// Validates and plans a circuit. Throws qfleet::Error when its state cannot fit
// in this machine's memory, or when an option is unknown or unavailable here. A
// circuit without measurements compiles (for states() and sample()); forward,
// vjp and jacobian then throw.
Program compile(const Circuit& circuit, const CompileOptions& options = {});

// Instruction sets this CPU and build support, best first (e.g. {"avx512","avx2","baseline"});
// with the environment variable QFLEET_ISA set to one of them, that one and the narrower
// ones only, as on a machine whose best it is.
std::vector<std::string> available_isas();

// Number of CUDA devices visible to this build (0 when built without CUDA).
int cuda_device_count();
// CUDA device `device`'s compute capability as 10 * major + minor (90 for an H100);
// -1 when the build has no CUDA backend or the device does not exist.
int cuda_compute_capability(int device = 0);

// Whether this build has the CUDA backend (compiled with nvcc; QFLEET_ENABLE_CUDA).
// Without it, device 'cuda' is an error and 'automatic' always picks the cpu.
bool built_with_cuda();

// The CUDA stream (a cudaStream_t, as void*) that calls from this thread enqueue
// on; nullptr (the default) is the legacy default stream. On a cuda program, a call
// whose buffers are all device memory is asynchronous on this stream: no host
// synchronisation, no cudaMalloc (stream-ordered pools only), so it can be captured
// in a CUDA graph. A call on host buffers stages them and synchronises the stream.
// A program without a GPU copy (cuda_device() == -1) takes host buffers only: it
// does not inspect pointers (that could create a CUDA context in CPU-only use), so
// device pointers handed to it are read on the host (the PyTorch adapter checks).
void set_cuda_stream(void* stream);
void* cuda_stream();

}  // namespace qfleet
