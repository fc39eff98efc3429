// The compiled form of a circuit: everything validated and precomputed once, so a
// call only reads it. Shared (immutable) by every Program copy and every thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/sv_plan.hpp"
#include "qfleet/program.hpp"

namespace qfleet::detail {

struct AmpEmbedPlan {
  bool active = false;
  int first_input = 0, n_features = 0;
  bool normalize = false;
  double pad = 0.0;
  std::vector<std::uint64_t> index;  // basis index of embedded amplitude j (2^k entries)
};

struct Resident;  // core/backend.hpp
struct MixedPlan;  // core/mixed_plan.hpp

struct Plan {
  explicit Plan(const Circuit& c) : circuit(c) {}
  Plan(Plan&&) = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  Circuit circuit;
  int n = 0;
  std::uint64_t dim = 0;  // 2^n
  int n_inputs = 0, n_weights = 0, n_outputs = 0, n_expvals = 0;
  Precision precision = Precision::complex128;
  int num_threads = 0;
  int isa = 0;  // index into the cpu backend's ISA table
  Device device = Device::cpu;               // as asked at compile time
  std::shared_ptr<const Resident> resident;  // the device copy (cuda, or automatic with a GPU)
  AmpEmbedPlan amp;  // also in the packed plan; the argument checks read it here
  // Estimated real FLOPs per sample (forward; adjoint sweep extra), for the thread count.
  double flops_forward = 0, flops_adjoint = 0;
  // The flat form every executor reads (sv_pack.cpp): the cpu reads `view`; the cuda
  // backend uploads `blob` and relocates `offsets` to the copy. `view` points into
  // `blob`, so a Plan moves (the buffer moves with it) but is never copied.
  std::vector<std::byte> blob;
  kern::SvPlan offsets;  // pointers hold byte offsets into blob
  kern::SvPlan view;     // pointers into blob (host)
  // Density-matrix circuits (Circuit::is_noisy, or CompileOptions::simulator): their
  // plan; the state-vector fields above other than the sizes are then unused.
  std::shared_ptr<const MixedPlan> mixed;
};

Plan build_plan(const Circuit& circuit, const CompileOptions& options);
// The AmplitudeEmbedding's basis indices (n-bit, wire 0 most significant), shared by
// the state-vector and density-matrix planners.
AmpEmbedPlan plan_amplitude_embedding(const Circuit& circuit);

// Bytes of physical memory (for "will it fit" checks).
std::size_t physical_memory_bytes();
// "1.5 GiB": sizes in "will not fit" messages.
std::string gib(double bytes);

}  // namespace qfleet::detail
