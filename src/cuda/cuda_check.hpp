// Error checking and stream casts shared by the .cu translation units (never
// included by the C++20 library, which sees only the seams sv_cuda.hpp / open_cuda.hpp).
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "qfleet/error.hpp"

namespace qfleet::gpu {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear sticky-free errors so later calls start clean
    throw Error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(e));
  }
}

inline cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

}  // namespace qfleet::gpu
