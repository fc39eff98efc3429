// Teacher-student regression: a hidden "teacher" circuit (AngleEmbedding + L
// StronglyEntanglingLayers, <Z_i> on every wire) labels random inputs; a "student"
// with the same architecture and fresh weights learns them by Adam on the
// engine's exact adjoint gradients, one batched vjp per step.
#include "demo.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numbers>
#include <numeric>
#include <random>
#include <vector>

#include "qfleet/names.hpp"
#include "qfleet/qfleet.hpp"

namespace qfleet::tools {

namespace {

template <class R>
int train(const DemoOptions& o, Precision precision) {
  using Clock = std::chrono::steady_clock;
  Circuit c(o.qubits);
  std::vector<int> wires(o.qubits);
  std::iota(wires.begin(), wires.end(), 0);
  c.angle_embedding(wires, Rotation::X).strongly_entangling_layers(wires, o.layers);
  for (int w = 0; w < o.qubits; ++w) c.expval(fmt::format("Z{}", w));
  CompileOptions opt;
  opt.precision = precision;
  opt.num_threads = o.threads;
  const Program prog = compile(c, opt);
  const int K = prog.n_outputs(), ni = prog.n_inputs(), nw = prog.n_weights();

  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> angle(-std::numbers::pi, std::numbers::pi);
  std::vector<R> X(std::size_t(o.dataset) * ni), teacher(nw), w(nw);
  for (auto& v : X) v = R(angle(rng));
  for (auto& v : teacher) v = R(angle(rng));
  for (auto& v : w) v = R(0.1 * angle(rng));
  const std::vector<R> Y = prog.forward(BatchArgs<R>{std::size_t(o.dataset), X, teacher});

  fmt::print("qfleet demo: a quantum layer trained on the engine's batched adjoint gradients.\n");
  fmt::print("  student learns a hidden teacher circuit: {} qubits, AngleEmbedding + {} StronglyEntanglingLayers,\n",
             o.qubits, o.layers);
  fmt::print("  {} weights, {} outputs, dataset {}, batch {}, Adam lr {}, {} ({} kernels, {} samples/tile)\n\n", nw, K,
             o.dataset, o.batch, o.lr, qfleet::to_string(precision), prog.isa(),
             prog.lanes());

  auto full_loss = [&](const std::vector<R>& weights) {
    const std::vector<R> out = prog.forward(BatchArgs<R>{std::size_t(o.dataset), X, weights});
    double l = 0;
    for (std::size_t i = 0; i < out.size(); ++i) l += double(out[i] - Y[i]) * double(out[i] - Y[i]);
    return l / double(out.size());
  };
  const double initial = full_loss(w);
  fmt::print("{:>6} {:>14} {:>16}\n", "step", "loss (MSE)", "us/step (f+b)");
  fmt::print("{:>6} {:>14.6e} {:>16}\n", 0, initial, "-");

  std::vector<R> xb(std::size_t(o.batch) * ni), yb(std::size_t(o.batch) * K), out(yb.size()), cot(yb.size()),
      gw(nw);
  std::vector<double> m(nw, 0.0), v(nw, 0.0);
  std::vector<std::size_t> order(o.dataset);
  std::iota(order.begin(), order.end(), 0);
  std::size_t cursor = order.size();
  double step_seconds = 0;
  const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  for (int step = 1; step <= o.steps; ++step) {
    for (int b = 0; b < o.batch; ++b) {  // minibatch without replacement, reshuffled each epoch
      if (cursor == order.size()) {
        std::shuffle(order.begin(), order.end(), rng);
        cursor = 0;
      }
      const std::size_t s = order[cursor++];
      std::copy_n(X.begin() + s * ni, ni, xb.begin() + std::size_t(b) * ni);
      std::copy_n(Y.begin() + s * K, K, yb.begin() + std::size_t(b) * K);
    }
    const auto t0 = Clock::now();
    // The cotangent d loss / d out = 2 (out - y) / size needs the outputs first, so a
    // step is one batched forward and one batched adjoint pass.
    prog.forward(BatchArgs<R>{std::size_t(o.batch), xb, w}, std::span<R>(out));
    for (std::size_t i = 0; i < out.size(); ++i) cot[i] = R(2) * (out[i] - yb[i]) / R(out.size());
    prog.vjp(BatchArgs<R>{std::size_t(o.batch), xb, w}, std::span<const R>(cot), Gradients<R>{{}, gw});
    step_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    for (int j = 0; j < nw; ++j) {
      m[j] = b1 * m[j] + (1 - b1) * gw[j];
      v[j] = b2 * v[j] + (1 - b2) * double(gw[j]) * gw[j];
      const double mh = m[j] / (1 - std::pow(b1, step)), vh = v[j] / (1 - std::pow(b2, step));
      w[j] -= R(o.lr * mh / (std::sqrt(vh) + eps));
    }
    if (step % std::max(1, o.steps / 10) == 0 || step == o.steps) {
      fmt::print("{:>6} {:>14.6e} {:>16.1f}\n", step, full_loss(w), 1e6 * step_seconds / step);
    }
  }
  const double final_loss = full_loss(w);

  // The gradient the loop used, checked once against central finite differences.
  std::vector<R> cot_full(Y.size());
  const std::vector<R> out_full = prog.forward(BatchArgs<R>{std::size_t(o.dataset), X, w});
  for (std::size_t i = 0; i < Y.size(); ++i) cot_full[i] = R(2) * (out_full[i] - Y[i]) / R(Y.size());
  prog.vjp(BatchArgs<R>{std::size_t(o.dataset), X, w}, std::span<const R>(cot_full), Gradients<R>{{}, gw});
  const double h = sizeof(R) == 8 ? 1e-5 : 1e-2;
  double worst = 0, scale = 0;
  for (int j = 0; j < nw; ++j) {
    std::vector<R> wp = w, wm = w;
    wp[j] += R(h);
    wm[j] -= R(h);
    const double fd = (full_loss(wp) - full_loss(wm)) / (2 * h);
    worst = std::max(worst, std::abs(fd - double(gw[j])));
    scale = std::max(scale, std::abs(fd));
  }
  fmt::print("\nfinal loss {:.3e} (from {:.3e}); mean forward+backward step {:.1f} us for batch {}\n", final_loss,
             initial, 1e6 * step_seconds / o.steps, o.batch);
  fmt::print("adjoint gradient vs central finite differences: max |diff| = {:.2e} (max |grad| {:.2e})\n", worst, scale);
  const bool learned = final_loss < 0.1 * initial;
  fmt::print("{}\n", learned ? "the student learned the teacher" : "the student did not reach 10% of its initial loss");
  return learned ? 0 : 1;
}

}  // namespace

int run_demo(const DemoOptions& o) {
  const auto p = value_in(kPrecisionNames, o.precision);
  if (!p) throw Error("precision must be " + names_in(kPrecisionNames) + ", got '" + o.precision + "'");
  return *p == Precision::complex64 ? train<float>(o, *p) : train<double>(o, *p);
}

}  // namespace qfleet::tools
