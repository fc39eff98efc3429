/* qfleet's circuit engine behind a C ABI (libqfleet_c, CMake target qfleet::c), for
 * callers without LibTorch: Python through ctypes (python/qfleet/_engine.py), or any
 * language with a C foreign-function interface.
 *
 *   qfleet_program* p = NULL;
 *   if (qfleet_compile(json, strlen(json), &p) != QFLEET_OK) puts(qfleet_last_error());
 *   double x[2] = {0.3, 1.1}, y[2];
 *   qfleet_forward(p, 2, x, 2, NULL, 0, y, 2);   // 2 samples, 1 input, no weight, 1 output
 *   qfleet_free(p);
 *
 * A program is compiled from the JSON of a "kind": "circuit" problem (docs/cli.md), the
 * same text torch.classes.qfleet.CircuitProgram takes; its "inputs" and "weights" may be
 * left out. Programs run in double precision only (complex128): a document asking for
 * "precision": "complex64" is refused at compile time rather than silently widened, so a
 * program here gives the same numbers as the PyTorch adapter's program of the same text.
 *
 * Arrays are row-major and passed with their length in elements, which is checked
 * against the program's shapes before anything is read or written:
 *   inputs   [batch, n_inputs]
 *   weights  [n_weights] shared by the batch, or [batch, n_weights] per sample
 *   complex arrays (states, density matrices) as interleaved (re, im) doubles; their
 *   lengths count complex entries, so the buffer holds twice as many doubles.
 * A pointer may be NULL where its length is 0. batch 0 is a call that does nothing.
 *
 * Every function returns QFLEET_OK or an error status and never lets a C++ exception
 * out; qfleet_last_error() then says why. A compiled program is immutable: calls on one
 * handle may run from several threads at once.
 */
#ifndef QFLEET_QFLEET_C_H
#define QFLEET_QFLEET_C_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#if defined(QFLEET_C_BUILDING)
#define QFLEET_C_API __declspec(dllexport)
#else
#define QFLEET_C_API __declspec(dllimport)
#endif
#else
#define QFLEET_C_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when a function's signature or meaning changes, so a binding can refuse a
 * library it was not written for. */
#define QFLEET_C_ABI_VERSION 1

typedef enum qfleet_status {
  QFLEET_OK = 0,
  QFLEET_ERROR_ARGUMENT = 1, /* this call's arguments: a NULL handle or buffer, a wrong length, a bad wire */
  QFLEET_ERROR_ENGINE = 2,   /* the JSON reader or the engine refused (bad document, non-finite values...) */
  QFLEET_ERROR_MEMORY = 3,   /* an allocation failed */
  QFLEET_ERROR_INTERNAL = 4  /* anything else; a defect of qfleet */
} qfleet_status;

/* A compiled circuit. */
typedef struct qfleet_program qfleet_program;

/* The library's version ("0.1.0") and QFLEET_C_ABI_VERSION as it was built. */
QFLEET_C_API const char* qfleet_version(void);
QFLEET_C_API int qfleet_abi_version(void);

/* CUDA devices the engine sees (0 where none is, or in a build without its CUDA backend),
 * and whether this build has the CUDA backend (1) or not (0). */
QFLEET_C_API int qfleet_cuda_device_count(void);
QFLEET_C_API int qfleet_built_with_cuda(void);

/* The message of this thread's last call, "" when it succeeded. Valid until the next
 * call from the same thread. */
QFLEET_C_API const char* qfleet_last_error(void);

/* Compiles the circuit of a JSON document of json_len bytes (not necessarily
 * NUL-terminated). On success *out is a new program to release with qfleet_free; on
 * failure it is NULL. */
QFLEET_C_API qfleet_status qfleet_compile(const char* json, size_t json_len, qfleet_program** out);

/* Releases a program (NULL: nothing). */
QFLEET_C_API void qfleet_free(qfleet_program* program);

/* The program's sizes; -1 for a NULL program. */
QFLEET_C_API int qfleet_n_qubits(const qfleet_program* program);
QFLEET_C_API int qfleet_n_inputs(const qfleet_program* program);
QFLEET_C_API int qfleet_n_weights(const qfleet_program* program);
QFLEET_C_API int qfleet_n_outputs(const qfleet_program* program);

/* 1 when the program simulates density matrices (a noisy circuit, or "simulator":
 * "density_matrix"), 0 for state vectors, -1 for a NULL program. */
QFLEET_C_API int qfleet_is_density_matrix(const qfleet_program* program);

/* The CPU instruction set its kernels run with ("avx512", "avx2", "baseline"); "" for
 * a NULL program. Lives as long as the program. */
QFLEET_C_API const char* qfleet_isa(const qfleet_program* program);

/* outputs [batch, n_outputs]: expectation values, then probabilities, in the order the
 * document lists them. */
QFLEET_C_API qfleet_status qfleet_forward(const qfleet_program* program, size_t batch, const double* inputs,
                                          size_t inputs_len, const double* weights, size_t weights_len,
                                          double* outputs, size_t outputs_len);

/* Vector-Jacobian product by one adjoint sweep per sample: from cotangents
 * [batch, n_outputs], grad_inputs [batch, n_inputs] and grad_weights shaped like the
 * weights (shared weights: summed over the batch). Either gradient may be skipped
 * (NULL, length 0); the others are overwritten. */
QFLEET_C_API qfleet_status qfleet_vjp(const qfleet_program* program, size_t batch, const double* inputs,
                                      size_t inputs_len, const double* weights, size_t weights_len,
                                      const double* cotangents, size_t cotangents_len, double* grad_inputs,
                                      size_t grad_inputs_len, double* grad_weights, size_t grad_weights_len);

/* Per-sample Jacobians jac_inputs [batch, n_outputs, n_inputs] and jac_weights
 * [batch, n_outputs, n_weights] (per sample even for shared weights); either may be
 * skipped (NULL, length 0). */
QFLEET_C_API qfleet_status qfleet_jacobian(const qfleet_program* program, size_t batch, const double* inputs,
                                           size_t inputs_len, const double* weights, size_t weights_len,
                                           double* jac_inputs, size_t jac_inputs_len, double* jac_weights,
                                           size_t jac_weights_len);

/* Final state vectors [batch, 2^n] complex (state-vector programs). */
QFLEET_C_API qfleet_status qfleet_states(const qfleet_program* program, size_t batch, const double* inputs,
                                         size_t inputs_len, const double* weights, size_t weights_len,
                                         double* states, size_t states_len);

/* Final density matrices [batch, 2^n, 2^n] complex (density-matrix programs; readout
 * errors do not apply, they act on measured bits). */
QFLEET_C_API qfleet_status qfleet_density_matrices(const qfleet_program* program, size_t batch,
                                                   const double* inputs, size_t inputs_len, const double* weights,
                                                   size_t weights_len, double* matrices, size_t matrices_len);

/* samples [batch, shots]: outcome indices on `wires` (n_wires of them; 0: all wires),
 * first wire most significant, with the circuit's readout errors. Reproducible: sample
 * b draws from its own stream derived from (seed, b), whatever the thread count. */
QFLEET_C_API qfleet_status qfleet_sample(const qfleet_program* program, size_t batch, const double* inputs,
                                         size_t inputs_len, const double* weights, size_t weights_len,
                                         const int* wires, size_t n_wires, size_t shots, uint64_t seed,
                                         uint64_t* samples, size_t samples_len);

#ifdef __cplusplus
}
#endif

#endif /* QFLEET_QFLEET_C_H */
