// The cuda backend's entry point. The circuit and open-system kernels arrive with
// their issues (see docs/architecture.md); this file proves the toolchain in every
// build and reports how many devices are visible.
#include <cuda_runtime.h>

extern "C" int qfleet_cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the "no driver" error so later calls start clean
    return 0;
  }
  return n;
}
