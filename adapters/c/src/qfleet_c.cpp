// The C ABI of qfleet/qfleet_c.h over qfleet::Program. Every entry point runs its body
// in guarded(): an exception unwinding into a C caller (or into ctypes) is undefined
// behaviour, so each one becomes a status and this thread's last-error message. The
// lengths a caller passes are checked here, before the engine is reached, because a
// C caller's pointer carries no size the engine could check.
#include "qfleet/qfleet_c.h"

#include <algorithm>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "qfleet/error.hpp"
#include "qfleet/json_problem.hpp"
#include "qfleet/message.hpp"
#include "qfleet/program.hpp"
#include "qfleet/version.hpp"

struct qfleet_program {
  qfleet::Program program;
  std::string isa;  // kept, so qfleet_isa() can hand out a pointer that lives as long as the program
};

namespace qfleet::c_api {
namespace {

thread_local std::string t_error;
// Set when t_error could not be stored (no memory left to copy the message into).
thread_local const char* t_fixed_error = nullptr;

// A mistake in this call's arguments, found here rather than by the engine.
class ArgumentError : public std::invalid_argument {
 public:
  ArgumentError(std::string_view op, const std::string& what)
      : std::invalid_argument("qfleet: " + std::string(op) + ": " + what) {}
};

qfleet_status fail(qfleet_status status, const char* message) noexcept {
  try {
    t_error = capped_message(message);
  } catch (...) {
    t_fixed_error = "qfleet: out of memory while reporting an error";
  }
  return status;
}

template <class F>
qfleet_status guarded(F&& body) noexcept {
  t_error.clear();
  t_fixed_error = nullptr;
  try {
    body();
    return QFLEET_OK;
  } catch (const ArgumentError& e) {
    return fail(QFLEET_ERROR_ARGUMENT, e.what());
  } catch (const qfleet::Error& e) {
    return fail(QFLEET_ERROR_ENGINE, e.what());
  } catch (const std::bad_alloc&) {
    return fail(QFLEET_ERROR_MEMORY, "qfleet: out of memory");
  } catch (const std::exception& e) {
    return fail(QFLEET_ERROR_INTERNAL, e.what());
  } catch (...) {
    return fail(QFLEET_ERROR_INTERNAL, "qfleet: an unknown exception");
  }
}

// a * b, refused when it does not fit a size_t (no buffer of that length can exist).
std::size_t product(std::string_view op, std::size_t a, std::size_t b) {
  if (b != 0 && a > std::numeric_limits<std::size_t>::max() / b) {
    throw ArgumentError(op, "the batch is too large (" + std::to_string(a) + " x " + std::to_string(b) +
                                " values do not fit in memory)");
  }
  return a * b;
}

void expect_length(std::string_view op, const char* what, std::size_t got, std::size_t want, const char* shape) {
  if (got != want) {
    throw ArgumentError(op, std::string(what) + " has " + std::to_string(got) + " values, expected " +
                                std::to_string(want) + " " + shape);
  }
}

template <class T>
std::span<T> buffer(std::string_view op, const char* what, T* data, std::size_t length) {
  if (data == nullptr && length != 0) {
    throw ArgumentError(op, std::string(what) + " is NULL but its length is " + std::to_string(length));
  }
  return {data, length};
}

const Program& program_of(std::string_view op, const qfleet_program* p) {
  if (p == nullptr) throw ArgumentError(op, "the program is NULL (not compiled, or compile failed)");
  return p->program;
}

// The checked batch every call reads: its program, inputs and weights.
struct Call {
  const Program& program;
  BatchArgs<double> args;
};

Call checked_call(std::string_view op, const qfleet_program* p, std::size_t batch, const double* inputs,
                  std::size_t inputs_len, const double* weights, std::size_t weights_len) {
  const Program& program = program_of(op, p);
  const std::size_t ni = static_cast<std::size_t>(program.n_inputs());
  const std::size_t nw = static_cast<std::size_t>(program.n_weights());
  expect_length(op, "inputs", inputs_len, product(op, batch, ni), "([batch, n_inputs])");
  const std::size_t per_sample = product(op, batch, nw);
  if (weights_len != nw && weights_len != per_sample) {
    throw ArgumentError(op, "weights has " + std::to_string(weights_len) + " values, expected " +
                                std::to_string(nw) + " (shared [n_weights]) or " + std::to_string(per_sample) +
                                " (per sample [batch=" + std::to_string(batch) + ", n_weights=" +
                                std::to_string(nw) + "])");
  }
  return {program,
          BatchArgs<double>{batch, buffer<const double>(op, "inputs", inputs, inputs_len),
                            buffer<const double>(op, "weights", weights, weights_len)}};
}

// 2^n amplitudes of a program's state vector.
std::size_t dimension(const Program& program) { return std::size_t{1} << program.n_qubits(); }

std::span<std::complex<double>> complex_buffer(std::string_view op, const char* what, double* data,
                                               std::size_t length) {
  // Twice `length` doubles must exist; the product also refuses a length whose bytes overflow.
  (void)product(op, length, 2 * sizeof(double));
  buffer(op, what, data, length);
  // std::complex<double> is laid out as double[2] ([complex.numbers.general]), so
  // interleaved (re, im) doubles are an array of complex values.
  return {reinterpret_cast<std::complex<double>*>(data), length};
}

}  // namespace
}  // namespace qfleet::c_api

using qfleet::c_api::buffer;
using qfleet::c_api::checked_call;
using qfleet::c_api::expect_length;
using qfleet::c_api::guarded;
using qfleet::c_api::product;

extern "C" {

const char* qfleet_version(void) { return QFLEET_VERSION_STRING; }

int qfleet_abi_version(void) { return QFLEET_C_ABI_VERSION; }

int qfleet_cuda_device_count(void) {
  try {
    return qfleet::cuda_device_count();
  } catch (...) {  // (it reports none rather than throwing; nothing may cross the C boundary)
    return 0;
  }
}

int qfleet_built_with_cuda(void) { return qfleet::built_with_cuda() ? 1 : 0; }

const char* qfleet_last_error(void) {
  return qfleet::c_api::t_fixed_error != nullptr ? qfleet::c_api::t_fixed_error : qfleet::c_api::t_error.c_str();
}

qfleet_status qfleet_compile(const char* json, size_t json_len, qfleet_program** out) {
  if (out != nullptr) *out = nullptr;
  return guarded([&] {
    constexpr std::string_view op = "compile";
    if (out == nullptr) throw qfleet::c_api::ArgumentError(op, "out is NULL (where the program would be written)");
    const std::string_view text(buffer(op, "json", json, json_len).data(), json_len);
    const auto problem =
        qfleet::json_problem::parse_circuit_problem(qfleet::json_problem::parse_text(text, "<circuit>"),
                                                    /*model_only=*/true);
    if (problem.options.precision != qfleet::Precision::complex128) {
      throw qfleet::json_problem::ProblemError(
          "precision", "the C binding runs complex128 programs only (its buffers are doubles); leave "
                       "\"precision\" out or set it to \"complex128\"");
    }
    auto handle = std::make_unique<qfleet_program>(
        qfleet_program{qfleet::compile(problem.circuit, problem.options), std::string()});
    handle->isa = handle->program.isa();
    *out = handle.release();
  });
}

void qfleet_free(qfleet_program* program) { delete program; }

int qfleet_n_qubits(const qfleet_program* p) { return p != nullptr ? p->program.n_qubits() : -1; }
int qfleet_n_inputs(const qfleet_program* p) { return p != nullptr ? p->program.n_inputs() : -1; }
int qfleet_n_weights(const qfleet_program* p) { return p != nullptr ? p->program.n_weights() : -1; }
int qfleet_n_outputs(const qfleet_program* p) { return p != nullptr ? p->program.n_outputs() : -1; }

int qfleet_is_density_matrix(const qfleet_program* p) {
  if (p == nullptr) return -1;
  return p->program.simulator() == qfleet::Simulator::density_matrix ? 1 : 0;
}

const char* qfleet_isa(const qfleet_program* p) { return p != nullptr ? p->isa.c_str() : ""; }

qfleet_status qfleet_forward(const qfleet_program* p, size_t batch, const double* inputs, size_t inputs_len,
                             const double* weights, size_t weights_len, double* outputs, size_t outputs_len) {
  return guarded([&] {
    constexpr std::string_view op = "forward";
    const auto c = checked_call(op, p, batch, inputs, inputs_len, weights, weights_len);
    const auto out = buffer(op, "outputs", outputs, outputs_len);
    expect_length(op, "outputs", outputs_len, product(op, batch, std::size_t(c.program.n_outputs())),
                  "([batch, n_outputs])");
    if (batch > 0) c.program.forward<double>(c.args, out);
  });
}

qfleet_status qfleet_vjp(const qfleet_program* p, size_t batch, const double* inputs, size_t inputs_len,
                         const double* weights, size_t weights_len, const double* cotangents, size_t cotangents_len,
                         double* grad_inputs, size_t grad_inputs_len, double* grad_weights,
                         size_t grad_weights_len) {
  return guarded([&] {
    constexpr std::string_view op = "vjp";
    const auto c = checked_call(op, p, batch, inputs, inputs_len, weights, weights_len);
    const auto cot = buffer(op, "cotangents", cotangents, cotangents_len);
    expect_length(op, "cotangents", cotangents_len, product(op, batch, std::size_t(c.program.n_outputs())),
                  "([batch, n_outputs])");
    const auto gi = buffer(op, "grad_inputs", grad_inputs, grad_inputs_len);
    const auto gw = buffer(op, "grad_weights", grad_weights, grad_weights_len);
    if (grad_inputs != nullptr) {
      expect_length(op, "grad_inputs", grad_inputs_len, inputs_len, "([batch, n_inputs], or NULL to skip)");
    }
    if (grad_weights != nullptr) {
      expect_length(op, "grad_weights", grad_weights_len, weights_len, "(shaped like the weights, or NULL to skip)");
    }
    // Overwritten whatever the engine does with a gradient it reduces over the batch.
    std::fill(gi.begin(), gi.end(), 0.0);
    std::fill(gw.begin(), gw.end(), 0.0);
    if (batch > 0) c.program.vjp<double>(c.args, cot, qfleet::Gradients<double>{gi, gw});
  });
}

qfleet_status qfleet_jacobian(const qfleet_program* p, size_t batch, const double* inputs, size_t inputs_len,
                              const double* weights, size_t weights_len, double* jac_inputs, size_t jac_inputs_len,
                              double* jac_weights, size_t jac_weights_len) {
  return guarded([&] {
    constexpr std::string_view op = "jacobian";
    const auto c = checked_call(op, p, batch, inputs, inputs_len, weights, weights_len);
    const std::size_t rows = product(op, batch, std::size_t(c.program.n_outputs()));
    const auto ji = buffer(op, "jac_inputs", jac_inputs, jac_inputs_len);
    const auto jw = buffer(op, "jac_weights", jac_weights, jac_weights_len);
    if (jac_inputs != nullptr) {
      expect_length(op, "jac_inputs", jac_inputs_len, product(op, rows, std::size_t(c.program.n_inputs())),
                    "([batch, n_outputs, n_inputs], or NULL to skip)");
    }
    if (jac_weights != nullptr) {
      expect_length(op, "jac_weights", jac_weights_len, product(op, rows, std::size_t(c.program.n_weights())),
                    "([batch, n_outputs, n_weights], or NULL to skip)");
    }
    if (batch > 0) c.program.jacobian<double>(c.args, ji, jw);
  });
}

qfleet_status qfleet_states(const qfleet_program* p, size_t batch, const double* inputs, size_t inputs_len,
                            const double* weights, size_t weights_len, double* states, size_t states_len) {
  return guarded([&] {
    constexpr std::string_view op = "states";
    const auto c = checked_call(op, p, batch, inputs, inputs_len, weights, weights_len);
    const auto out = qfleet::c_api::complex_buffer(op, "states", states, states_len);
    expect_length(op, "states", states_len, product(op, batch, qfleet::c_api::dimension(c.program)),
                  "(complex entries: [batch, 2^n])");
    if (batch > 0) c.program.states<double>(c.args, out);
  });
}

qfleet_status qfleet_density_matrices(const qfleet_program* p, size_t batch, const double* inputs,
                                      size_t inputs_len, const double* weights, size_t weights_len, double* matrices,
                                      size_t matrices_len) {
  return guarded([&] {
    constexpr std::string_view op = "density_matrices";
    const auto c = checked_call(op, p, batch, inputs, inputs_len, weights, weights_len);
    const auto out = qfleet::c_api::complex_buffer(op, "matrices", matrices, matrices_len);
    const std::size_t d = qfleet::c_api::dimension(c.program);
    expect_length(op, "matrices", matrices_len, product(op, batch, product(op, d, d)),
                  "(complex entries: [batch, 2^n, 2^n])");
    if (batch > 0) c.program.density_matrices<double>(c.args, out);
  });
}

qfleet_status qfleet_sample(const qfleet_program* p, size_t batch, const double* inputs, size_t inputs_len,
                            const double* weights, size_t weights_len, const int* wires, size_t n_wires,
                            size_t shots, uint64_t seed, uint64_t* samples, size_t samples_len) {
  return guarded([&] {
    constexpr std::string_view op = "sample";
    const auto c = checked_call(op, p, batch, inputs, inputs_len, weights, weights_len);
    if (shots == 0) throw qfleet::c_api::ArgumentError(op, "shots must be positive, got 0");
    const auto wire_span = buffer(op, "wires", wires, n_wires);
    for (const int q : wire_span) {
      if (q < 0 || q >= c.program.n_qubits()) {
        throw qfleet::c_api::ArgumentError(
            op, "wire " + std::to_string(q) + " is not in [0, " + std::to_string(c.program.n_qubits()) + ")");
      }
    }
    const auto out = buffer(op, "samples", samples, samples_len);
    expect_length(op, "samples", samples_len, product(op, batch, shots), "([batch, shots])");
    if (batch > 0) {
      c.program.sample<double>(c.args, std::vector<int>(wire_span.begin(), wire_span.end()), shots, seed, out);
    }
  });
}

}  // extern "C"
