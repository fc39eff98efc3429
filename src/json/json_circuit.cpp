// Running a circuit problem (docs/cli.md) and its results as JSON or .npy files
// (json_problem.cpp reads and checks it).
#include "qfleet/json_problem.hpp"

#include "json_common.hpp"
#include "npy.hpp"

#include <cmath>
#include <complex>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace qfleet::json_problem {

namespace {

using nlohmann::json;
using namespace internal;

// ------------------------------------------------------------------ output ---

// Columns [c0, c0 + count) of each of the B rows of `src` (row stride `stride`).
template <class R>
std::vector<R> columns(const std::vector<R>& src, std::size_t B, std::size_t stride, std::size_t c0,
                       std::size_t count) {
  std::vector<R> out(B * count);
  for (std::size_t b = 0; b < B; ++b)
    std::copy_n(src.begin() + static_cast<std::ptrdiff_t>(b * stride + c0), count,
                out.begin() + static_cast<std::ptrdiff_t>(b * count));
  return out;
}

// "states" ([batch, 2^n] complex), or "density_matrices" ([batch, 2^n, 2^n]) for a
// density-matrix program: in the JSON result or as .npy files.
template <class R>
void add_states(const CircuitProblem& p, const Program& prog, const BatchArgs<R>& args, json& res) {
  const std::size_t B = p.batch, dim = std::size_t{1} << prog.n_qubits();
  const bool npy = !p.output_npy.empty();
  if (prog.simulator() == Simulator::density_matrix) {
    std::vector<std::complex<R>> rho(B * dim * dim);
    prog.density_matrices(args, std::span<std::complex<R>>(rho));
    if (npy) {
      res["density_matrices"] = npy::write_result(p.output_npy, "density_matrices", {B, dim, dim}, rho);
      return;
    }
    json all = json::array();
    for (std::size_t b = 0; b < B; ++b) {
      json mat = json::array();
      for (std::size_t i = 0; i < dim; ++i) {
        json row = json::array();
        for (std::size_t j = 0; j < dim; ++j) row.push_back(complex_pair(rho[(b * dim + i) * dim + j]));
        mat.push_back(std::move(row));
      }
      all.push_back(std::move(mat));
    }
    res["density_matrices"] = std::move(all);
    return;
  }
  std::vector<std::complex<R>> st(B * dim);
  prog.states(args, std::span<std::complex<R>>(st));
  if (npy) {
    res["states"] = npy::write_result(p.output_npy, "states", {B, dim}, st);
    return;
  }
  json all = json::array();
  for (std::size_t b = 0; b < B; ++b) {
    json row = json::array();
    for (std::size_t i = 0; i < dim; ++i) row.push_back(complex_pair(st[b * dim + i]));
    all.push_back(std::move(row));
  }
  res["states"] = std::move(all);
}

// "samples": `shots` basis-state indices per sample, seeded.
template <class R>
void add_samples(const CircuitProblem& p, const Program& prog, const BatchArgs<R>& args, json& res) {
  const std::size_t B = p.batch, shots = static_cast<std::size_t>(*p.shots);
  std::vector<std::uint64_t> s(B * shots);
  prog.sample(args, {}, shots, p.seed, std::span<std::uint64_t>(s));
  if (!p.output_npy.empty()) {
    res["samples"] = npy::write_result(p.output_npy, "samples", {B, shots}, s);
    return;
  }
  json all = json::array();
  for (std::size_t b = 0; b < B; ++b) {
    all.push_back(json(std::vector<std::uint64_t>(s.begin() + static_cast<std::ptrdiff_t>(b * shots),
                                                  s.begin() + static_cast<std::ptrdiff_t>((b + 1) * shots))));
  }
  res["samples"] = std::move(all);
}

// Where each output sits in a row of a program's outputs: the K expectation values,
// then each probs measurement (offset, size), then the purity column.
struct OutputLayout {
  std::size_t no = 0, K = 0, purity_col = 0;
  std::vector<std::size_t> offset, size;
  std::size_t n_purity() const { return no - purity_col; }
};

OutputLayout output_layout(const CircuitProblem& p, std::size_t no) {
  OutputLayout l;
  l.no = no;
  l.K = static_cast<std::size_t>(p.n_observables);
  std::size_t col = l.K;
  for (const auto& wires : p.probs) {
    l.offset.push_back(col);
    l.size.push_back(std::size_t{1} << wires.size());
    col += l.size.back();
  }
  l.purity_col = col;
  return l;
}

// Per-measurement values as the "probs" key's shape: one measurement given as a flat
// wire list -> its value; a list of wire lists -> a list.
template <class Make>
json per_measurement(const CircuitProblem& p, Make make) {
  if (!p.probs_nested) return make(std::size_t{0});
  json all = json::array();
  for (std::size_t m = 0; m < p.probs.size(); ++m) all.push_back(make(m));
  return all;
}

// ".probs.npy", or ".probs.M.npy" per measurement when "probs" was a list of wire lists.
std::string probs_key(const CircuitProblem& p, const std::string& key, std::size_t m) {
  return p.probs_nested ? key + "." + std::to_string(m) : key;
}

// The Jacobians of every output by the inputs and the weights, as the outputs are laid out.
template <class R>
void add_gradients(const CircuitProblem& p, const Program& prog, const BatchArgs<R>& args, const OutputLayout& l,
                   json& res) {
  const std::size_t B = p.batch, no = l.no;
  const std::size_t ni = static_cast<std::size_t>(prog.n_inputs());
  const std::size_t nw = static_cast<std::size_t>(prog.n_weights());
  const bool npy = !p.output_npy.empty();
  std::vector<R> ji(B * no * ni), jw(B * no * nw);
  prog.jacobian(args, std::span<R>(ji), std::span<R>(jw));
  // jac[b][k0 .. k0+count)[n]
  auto block = [&](const std::vector<R>& jac, std::size_t n, std::size_t k0, std::size_t count,
                   const std::string& key) -> json {
    if (npy) {
      return npy::write_result(p.output_npy, key, {B, count, n}, columns(jac, B, no * n, k0 * n, count * n));
    }
    json rows = json::array();
    for (std::size_t b = 0; b < B; ++b) {
      json per_output = json::array();
      for (std::size_t k = k0; k < k0 + count; ++k) per_output.push_back(reals(jac.data() + (b * no + k) * n, n));
      rows.push_back(std::move(per_output));
    }
    return rows;
  };
  res["grad_inputs"] = block(ji, ni, 0, l.K, "grad_inputs");
  res["grad_weights"] = block(jw, nw, 0, l.K, "grad_weights");
  if (l.n_purity() > 0) {
    res["grad_purity_inputs"] = block(ji, ni, l.purity_col, 1, "grad_purity_inputs");
    res["grad_purity_weights"] = block(jw, nw, l.purity_col, 1, "grad_purity_weights");
  }
  if (!p.probs.empty()) {
    res["grad_probs_inputs"] = per_measurement(p, [&](std::size_t m) {
      return block(ji, ni, l.offset[m], l.size[m], probs_key(p, "grad_probs_inputs", m));
    });
    res["grad_probs_weights"] = per_measurement(p, [&](std::size_t m) {
      return block(jw, nw, l.offset[m], l.size[m], probs_key(p, "grad_probs_weights", m));
    });
  }
}

template <class R>
json run(const CircuitProblem& p) {
  const Program prog = compile(p.circuit, p.options);
  const std::size_t B = p.batch;
  const std::size_t no = static_cast<std::size_t>(prog.n_outputs());
  const OutputLayout l = output_layout(p, no);
  const std::size_t K = l.K;
  BatchArgs<R> args;
  args.batch = B;
  // A complex64 program reads float copies; a complex128 one the parsed arrays themselves
  // (a B = 32,768 batch's copy was a megabyte of first-touched pages per array).
  std::vector<R> in, w;
  if constexpr (std::is_same_v<R, double>) {
    args.inputs = p.inputs;
    args.weights = p.weights;
  } else {
    in.assign(p.inputs.begin(), p.inputs.end());
    w.assign(p.weights.begin(), p.weights.end());
    args.inputs = in;
    args.weights = w;
  }

  const std::vector<R> out = no > 0 ? prog.forward(args) : std::vector<R>{};
  json res = json::object();
  res["qubits"] = prog.n_qubits();
  res["batch"] = B;
  res["precision"] = precision_name(prog.precision());
  res["isa"] = prog.isa();

  const bool npy = !p.output_npy.empty();
  if (npy) {
    // Only expectation values: the outputs are the array itself, written without a copy.
    res["expvals"] = no == K ? npy::write_result(p.output_npy, "expvals", {B, K}, out)
                             : npy::write_result(p.output_npy, "expvals", {B, K}, columns(out, B, no, 0, K));
  } else {
    json expvals = json::array();
    for (std::size_t b = 0; b < B; ++b) expvals.push_back(reals(out.data() + b * no, K));
    res["expvals"] = std::move(expvals);
  }

  if (!p.probs.empty() && npy) {
    res["probs"] = per_measurement(p, [&](std::size_t m) {
      return npy::write_result(p.output_npy, probs_key(p, "probs", m), {B, l.size[m]},
                               columns(out, B, no, l.offset[m], l.size[m]));
    });
  } else if (!p.probs.empty()) {
    res["probs"] = per_measurement(p, [&](std::size_t m) {
      json rows = json::array();
      for (std::size_t b = 0; b < B; ++b) rows.push_back(reals(out.data() + b * no + l.offset[m], l.size[m]));
      return rows;
    });
  }

  if (l.n_purity() > 0 && npy) {
    res["purity"] = npy::write_result(p.output_npy, "purity", {B}, columns(out, B, no, l.purity_col, 1));
  } else if (l.n_purity() > 0) {
    json rows = json::array();
    for (std::size_t b = 0; b < B; ++b) rows.push_back(static_cast<double>(out[b * no + l.purity_col]));
    res["purity"] = std::move(rows);
  }

  if (p.gradients) add_gradients(p, prog, args, l, res);
  if (p.states) add_states(p, prog, args, res);
  if (p.shots) add_samples(p, prog, args, res);
  return res;
}

}  // namespace

json evaluate(const CircuitProblem& p) {
  // Refuse results too large to hold before computing anything.
  const double B = static_cast<double>(p.batch);
  const double outputs = static_cast<double>(p.circuit.n_outputs());
  double values = B * outputs;
  if (p.gradients) values += B * outputs * (p.n_inputs + p.n_weights);
  if (p.states) {
    const bool dm = p.options.simulator == Simulator::density_matrix ||
                    (p.options.simulator == Simulator::automatic && p.circuit.is_noisy());
    values += B * std::ldexp(2.0, (dm ? 2 : 1) * std::min(p.circuit.n_qubits(), 40));
  }
  if (p.shots) values += B * static_cast<double>(*p.shots);
  expect_result_fits(values, "the batch, shots, qubits with \"states\", or outputs");
  if (p.options.precision == Precision::complex64) return run<float>(p);
  return run<double>(p);
}

}  // namespace qfleet::json_problem
