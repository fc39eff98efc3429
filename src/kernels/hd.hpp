// Marks functions that compile for both the host and a CUDA device, so each piece
// of arithmetic is written once and shared by the cpu and cuda backends.
#pragma once

#if defined(__CUDACC__)
#define QFLEET_HD __host__ __device__
#else
#define QFLEET_HD
#endif
