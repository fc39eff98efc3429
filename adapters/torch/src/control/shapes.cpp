// Pulse shapes and penalties (include/qfleet/control.hpp): ATen expressions, so autograd
// differentiates them and the engine's exact gradient continues through them; registered
// as composite operators (torch.ops.qfleet.*) so Python calls this same code.
#include <numbers>

#include "qfleet/control.hpp"

namespace qfleet::control {

using torch::Tensor;

namespace {

// The segments' midpoints in units of the duration, [n_seg], in t's dtype.
Tensor midpoints(int64_t n_seg, const Tensor& like) {
  TORCH_CHECK_VALUE(n_seg >= 1, "qfleet.control: n_seg must be >= 1, got ", n_seg);
  return (torch::arange(n_seg, like.options()) + 0.5) / double(n_seg);
}

void check_floating(const Tensor& t, const char* what) {
  TORCH_CHECK_TYPE(t.is_floating_point(), "qfleet.control: ", what, " must be a floating tensor, got ", t.scalar_type());
}

}  // namespace

Tensor fourier_pulse(const Tensor& coeffs, const Tensor& frequencies, int64_t n_seg) {
  check_floating(coeffs, "the Fourier coefficients");
  TORCH_CHECK_VALUE(frequencies.dim() == 1 && frequencies.size(0) >= 1,
                    "qfleet.control: frequencies must be [K] with K >= 1, got ", frequencies.sizes());
  const int64_t K = frequencies.size(0);
  TORCH_CHECK_VALUE(coeffs.dim() >= 2 && coeffs.size(-2) == 2 * K, "qfleet.control: Fourier coefficients must be [..., 2K = ",
                    2 * K, ", n_ctrl] (cosines, then sines), got ", coeffs.sizes());
  const Tensor s = midpoints(n_seg, coeffs);
  const Tensor phase = 2 * std::numbers::pi * s.unsqueeze(1) * frequencies.to(coeffs.scalar_type()).unsqueeze(0);
  const Tensor basis = torch::cat({torch::cos(phase), torch::sin(phase)}, 1);  // [n_seg, 2K]
  return torch::matmul(basis, coeffs);
}

Tensor gaussian_pulse(const Tensor& params, int64_t n_seg) {
  check_floating(params, "the Gaussian parameters");
  TORCH_CHECK_VALUE(params.dim() >= 2 && params.size(-1) == 3,
                    "qfleet.control: Gaussian parameters must be [..., n_ctrl, 3] (amplitude, centre, width), got ",
                    params.sizes());
  const Tensor s = midpoints(n_seg, params).unsqueeze(1);  // [n_seg, 1]
  const Tensor a = params.select(-1, 0).unsqueeze(-2), c = params.select(-1, 1).unsqueeze(-2);
  const Tensor w = params.select(-1, 2).unsqueeze(-2);
  return a * torch::exp(-(s - c).square() / (2 * w.square()));
}

Tensor drag_pulse(const Tensor& params, int64_t n_seg) {
  check_floating(params, "the DRAG parameters");
  TORCH_CHECK_VALUE(params.dim() >= 1 && params.size(-1) == 4,
                    "qfleet.control: DRAG parameters must be [..., 4] (amplitude, centre, width, beta), got ",
                    params.sizes());
  const Tensor s = midpoints(n_seg, params);  // [n_seg]
  const Tensor a = params.select(-1, 0).unsqueeze(-1), c = params.select(-1, 1).unsqueeze(-1);
  const Tensor w = params.select(-1, 2).unsqueeze(-1), beta = params.select(-1, 3).unsqueeze(-1);
  const Tensor g = a * torch::exp(-(s - c).square() / (2 * w.square()));
  const Tensor dg = -(s - c) / w.square() * g;  // d g / d s
  return torch::stack({g, beta * dg}, -1);
}

Tensor smoothness_penalty(const Tensor& amplitudes) {
  TORCH_CHECK_VALUE(amplitudes.dim() >= 2, "qfleet.control: amplitudes must be [..., n_seg, n_ctrl], got ",
                    amplitudes.sizes());
  const int64_t n = amplitudes.size(-2);
  if (n < 2) return amplitudes.sum({-2, -1}) * 0;
  const Tensor d = amplitudes.narrow(-2, 1, n - 1) - amplitudes.narrow(-2, 0, n - 1);
  return d.square().sum({-2, -1});
}

Tensor power_penalty(const Tensor& amplitudes, const Tensor& dt) {
  TORCH_CHECK_VALUE(amplitudes.dim() >= 2, "qfleet.control: amplitudes must be [..., n_seg, n_ctrl], got ",
                    amplitudes.sizes());
  TORCH_CHECK_VALUE(dt.dim() >= 1 && dt.size(-1) == amplitudes.size(-2), "qfleet.control: dt must be [..., n_seg = ",
                    amplitudes.size(-2), "], got ", dt.sizes());
  return (amplitudes.square().sum(-1) * dt).sum(-1);
}

}  // namespace qfleet::control

TORCH_LIBRARY_FRAGMENT(qfleet, m) {
  m.def("fourier_pulse(Tensor coeffs, Tensor frequencies, int n_seg) -> Tensor", &qfleet::control::fourier_pulse);
  m.def("gaussian_pulse(Tensor params, int n_seg) -> Tensor", &qfleet::control::gaussian_pulse);
  m.def("drag_pulse(Tensor params, int n_seg) -> Tensor", &qfleet::control::drag_pulse);
  m.def("smoothness_penalty(Tensor amplitudes) -> Tensor", &qfleet::control::smoothness_penalty);
  m.def("power_penalty(Tensor amplitudes, Tensor dt) -> Tensor", &qfleet::control::power_penalty);
}
