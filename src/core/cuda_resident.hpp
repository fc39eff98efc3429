// A compiled program's copy on a CUDA device (the packed plan, uploaded once at
// compile time), and the device choice for calls on host data. Used by compile.cpp
// and program.cpp; everything that touches CUDA is behind QFLEET_WITH_CUDA there.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "core/open_plan.hpp"
#include "core/plan.hpp"
#include "kernels/open_view.hpp"
#include "kernels/sv_plan.hpp"

namespace qfleet::detail {

struct CudaResident {
  int device = 0;
  void* blob = nullptr;  // device memory holding the packed plan
  kern::SvPlan view;     // the plan with device pointers
  int sm_count = 0;
  std::size_t smem_optin = 0, total_mem = 0;
  std::string name;
  CudaResident() = default;
  CudaResident(const CudaResident&) = delete;
  CudaResident& operator=(const CudaResident&) = delete;
  ~CudaResident();
};

// Uploads the plan to the current CUDA device; throws qfleet::Error when the build
// has no CUDA backend, no device is visible, or one circuit cannot fit there.
std::shared_ptr<const CudaResident> make_cuda_resident(const Plan& plan);

// The cost model behind Device::automatic for calls on host data (see
// docs/architecture.md, "Choosing the device"): estimated seconds on each side.
double estimate_cpu_seconds(const Plan& plan, std::size_t batch, bool adjoint, int threads);
double estimate_cuda_seconds(const Plan& plan, std::size_t batch, bool adjoint, std::size_t bytes_moved);

// An open-system plan's copy on the device (the packed blob of open_pack.cpp).
struct OpenCudaResident {
  int device = 0;
  void* blob = nullptr;
  kern::OpenView view;  // device pointers
  int sm_count = 0;
  std::size_t smem_optin = 0, total_mem = 0;
  std::string name;
  OpenCudaResident() = default;
  OpenCudaResident(const OpenCudaResident&) = delete;
  OpenCudaResident& operator=(const OpenCudaResident&) = delete;
  ~OpenCudaResident();
};

std::shared_ptr<const OpenCudaResident> make_open_cuda_resident(const OpenPlan& plan);

// The same cost model for open-system calls (flops from OpenPlan::flops_*).
double estimate_open_cpu_seconds(const OpenPlan& plan, std::size_t batch, bool adjoint, int threads);
double estimate_open_cuda_seconds(const OpenPlan& plan, std::size_t batch, bool adjoint, std::size_t bytes_moved);

}  // namespace qfleet::detail
