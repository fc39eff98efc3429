// The device backend of a build without one (CMake builds this file instead of
// src/cuda/cuda_backend.cpp when QFLEET_ENABLE_CUDA is off).
#include "core/backend.hpp"

namespace qfleet::detail {

const DeviceBackend* device_backend() { return nullptr; }

}  // namespace qfleet::detail
