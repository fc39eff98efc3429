// `qfleet demo`: a teacher-student demo (the main job is qfleet-meta) - a quantum layer
// trained inside a plain C++ loop on the engine's batched forward and adjoint passes.
#pragma once

#include <cstdint>
#include <string>

namespace qfleet::tools {

struct DemoOptions {
  int qubits = 4;
  int layers = 3;
  int batch = 64;
  int dataset = 512;
  int steps = 1000;
  double lr = 0.05;
  std::uint64_t seed = 1;
  int threads = 0;
  std::string precision = "complex128";
};

// Returns a process exit status (0 when the student reached the teacher).
int run_demo(const DemoOptions& options);

}  // namespace qfleet::tools
