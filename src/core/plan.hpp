// The compiled form of a circuit: everything validated and precomputed once, so a
// call only reads it. Shared (immutable) by every Program copy and every thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/executor.hpp"
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

struct DmCompiled;  // core/dm_compiled.hpp

// A compiled circuit: ModelKind::statevector, or density_matrix with `dm` set.
struct Plan : Model {
  explicit Plan(const Circuit& c) : Model(ModelKind::statevector), circuit(c) {}
  Plan(Plan&&) = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  Circuit circuit;
  int n = 0;
  std::uint64_t dim = 0;  // 2^n
  int n_inputs = 0, n_weights = 0, n_outputs = 0, n_expvals = 0;
  AmpEmbedPlan amp;  // also in the packed plan; the argument checks read it here
  // The flat form every executor reads (sv_pack.cpp): the cpu reads `view`; the cuda
  // backend uploads `blob` and relocates `offsets` to the copy. `view` points into
  // `blob`, so a Plan moves (the buffer moves with it) but is never copied.
  std::vector<std::byte> blob;
  kern::SvPlan offsets;  // pointers hold byte offsets into blob
  kern::SvPlan view;     // pointers into blob (host)
  // Density-matrix circuits (Circuit::is_noisy, or CompileOptions::simulator): their
  // plan (kind density_matrix); the state-vector fields above other than the sizes
  // are then unused.
  std::shared_ptr<const DmCompiled> dm;
};

Plan build_plan(const Circuit& circuit, const CompileOptions& options);
// The sizes and options both circuit planners set (n, dim, inputs, weights, precision,
// threads); throws on a negative thread count.
void set_circuit_sizes(Plan& plan, const Circuit& circuit, const CompileOptions& options);
// The AmplitudeEmbedding's basis indices (n-bit, wire 0 most significant), shared by
// the state-vector and density-matrix planners.
AmpEmbedPlan plan_amplitude_embedding(const Circuit& circuit);

// Bytes of physical memory (for "will it fit" checks).
std::size_t physical_memory_bytes();
// "1.5 GiB": sizes in "will not fit" messages.
std::string gib(double bytes);

}  // namespace qfleet::detail
