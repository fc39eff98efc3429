// Marks functions that compile for both the host and a CUDA device, so each piece
// of arithmetic is written once and shared by the cpu and cuda backends.
#pragma once

#if defined(__CUDACC__)
#define QFLEET_HD __host__ __device__
#else
#define QFLEET_HD
#endif

// QFLEET_HD for a piece of a hot function split out for reading: inlined where it is
// called, as if still written there (the caller's loop, constants and aliasing facts).
#if defined(__CUDACC__)
#define QFLEET_HD_INLINE __host__ __device__ __forceinline__
#else
#define QFLEET_HD_INLINE __attribute__((always_inline)) inline
#endif

// QFLEET_HD for a step called rarely from a hot kernel, kept out of line on a device so
// that its registers do not raise the whole kernel's allocation (nvcc allocates for the
// kernel's busiest point, inlined callees included). Inlined as the host compiler likes.
#if defined(__CUDACC__)
#define QFLEET_HD_NOINLINE __host__ __device__ __noinline__
#else
#define QFLEET_HD_NOINLINE inline
#endif

// `#pragma omp simd CLAUSES` on the host, e.g. QFLEET_OMP_SIMD(reduction(max : err)) for a
// loop whose result is a maximum (its order does not change it, so the compiler may take
// it in vector lanes; without the pragma it keeps the running maximum in order, one
// lane). Every variable the loop carries must be in a clause. Nothing on a device.
#define QFLEET_PRAGMA(x) _Pragma(#x)
#if defined(_OPENMP) && !defined(__CUDACC__)
#define QFLEET_OMP_SIMD(clauses) QFLEET_PRAGMA(omp simd clauses)
#else
#define QFLEET_OMP_SIMD(clauses)
#endif
