// The executor registry's rows a backend matrix runs (BackendMatrix, DmMatrix,
// OpenMatrix), and how a row becomes compile options. A row on a device the matrices
// cannot drive fails the calling test: teach on_row() its option first.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/executor.hpp"
#include "qfleet/program.hpp"

namespace qfleet_test {

inline bool drivable(const qfleet::detail::Executor& e) {
  return std::string(e.device) == "cpu" || std::string(e.device) == "cuda";
}

// The rows of `kind`: every cpu row; the cuda row where a GPU is visible (its bodies
// run on the CPU as the matrices' emulated rows).
inline std::vector<const qfleet::detail::Executor*> matrix_rows(qfleet::detail::ModelKind kind) {
  std::vector<const qfleet::detail::Executor*> rows;
  for (const auto& e : qfleet::detail::executors()) {
    if (e.kind != kind) continue;
    if (!drivable(e)) {
      ADD_FAILURE() << "the " << qfleet::detail::model_kind_name(kind) << " matrix cannot drive device '"
                    << e.device << "'";
    } else if (e.host || qfleet::cuda_device_count() > 0) {
      rows.push_back(&e);
    }
  }
  return rows;
}

// Compile options (CompileOptions or OpenCompileOptions) that place a model on `row`.
template <class Options>
Options on_row(Options o, const qfleet::detail::Executor& row) {
  if (row.host) {
    o.isa = row.isa;
  } else {
    o.device = qfleet::Device::cuda;
  }
  return o;
}

}  // namespace qfleet_test
