// The meta-control policy: an MLP from task features to pulse amplitudes, on one flat
// parameter vector so that per-task fast weights are plain [T, P] tensors (meta_control.hpp).
#include <cmath>
#include <stdexcept>
#include <vector>

#include "meta_control.hpp"

namespace qfleet::meta {

using torch::Tensor;

PolicySpec policy_spec(const Config& cfg, const Problem& problem) {
  PolicySpec s;
  s.in = n_features(cfg);
  s.width = cfg.hidden_width;
  s.layers = cfg.hidden_layers;
  s.out = int64_t(problem.n_segments()) * problem.n_controls();
  s.layer_norm = cfg.layer_norm;
  s.init = cfg.init;
  s.init_gain = cfg.init_gain;
  s.output_init_gain = cfg.output_init_gain;
  s.output = cfg.output;
  s.scale = cfg.amplitude_scale;
  s.clamp = cfg.amplitude_clamp;
  return s;
}

Policy::Policy(PolicySpec spec) : spec_(std::move(spec)) {
  dims_.push_back(spec_.in);
  for (int64_t l = 0; l < spec_.layers; ++l) dims_.push_back(spec_.width);
  dims_.push_back(spec_.out);
  for (std::size_t l = 0; l + 1 < dims_.size(); ++l) {
    size_ += dims_[l] * dims_[l + 1] + dims_[l + 1];
    if (spec_.layer_norm && l + 2 < dims_.size()) size_ += 2 * dims_[l + 1];
  }
}

namespace {

// torch.nn.init.orthogonal_ on a weight of torch's shape [out, in]: a Gaussian matrix's QR
// (of its transpose when out < in), Q's columns signed by R's diagonal, times the gain
// (Saxe et al., arXiv:1312.6120). Drawn from `gen` so that the seed fixes it.
Tensor orthogonal(int64_t out, int64_t in, double gain, at::Generator& gen, torch::ScalarType dtype) {
  const bool wide = out < in;
  Tensor a = torch::randn({wide ? in : out, wide ? out : in}, gen, torch::TensorOptions().dtype(torch::kFloat64));
  auto [q, r] = torch::linalg_qr(a);
  q = q * torch::sign(torch::diagonal(r)).unsqueeze(0);
  if (wide) q = q.t();
  return (gain * q).to(dtype);  // [out, in]
}

}  // namespace

Tensor Policy::init(at::Generator& gen, torch::ScalarType dtype) const {
  std::vector<Tensor> pieces;
  const auto opts = torch::TensorOptions().dtype(dtype);
  for (std::size_t l = 0; l + 1 < dims_.size(); ++l) {
    const int64_t in = dims_[l], out = dims_[l + 1];
    const bool hidden = l + 2 < dims_.size();
    if (spec_.init == "orthogonal") {
      const double gain = hidden ? spec_.init_gain : spec_.output_init_gain;
      pieces.push_back(orthogonal(out, in, gain, gen, dtype).t().contiguous().view(-1));  // stored [in, out]
      pieces.push_back(torch::zeros({out}, opts));
    } else {
      const double bound = 1.0 / std::sqrt(double(in));
      pieces.push_back((torch::rand({in * out + out}, gen, opts) * 2 - 1) * bound);
    }
    if (spec_.layer_norm && hidden) {
      pieces.push_back(torch::ones({out}, opts));
      pieces.push_back(torch::zeros({out}, opts));
    }
  }
  return torch::cat(pieces);
}

std::vector<Tensor> Policy::split(const Tensor& params) const {
  const int64_t dim = params.dim() - 1;
  std::vector<Tensor> out;
  int64_t off = 0;
  auto take = [&](int64_t n) {
    out.push_back(params.slice(dim, off, off + n));
    off += n;
  };
  for (std::size_t l = 0; l + 1 < dims_.size(); ++l) {
    take(dims_[l] * dims_[l + 1]);
    take(dims_[l + 1]);
    if (spec_.layer_norm && l + 2 < dims_.size()) {
      take(dims_[l + 1]);
      take(dims_[l + 1]);
    }
  }
  return out;
}

Tensor Policy::forward(const Tensor& params, const Tensor& features) const { return forward(split(params), features); }

Tensor Policy::forward(const std::vector<Tensor>& pieces, const Tensor& features) const {
  const int64_t T = features.size(0);
  Tensor h = features;
  std::size_t p = 0;
  for (std::size_t l = 0; l + 1 < dims_.size(); ++l) {
    const int64_t in = dims_[l], out = dims_[l + 1];
    const Tensor& W = pieces[p++];
    const Tensor& b = pieces[p++];
    if (W.dim() == 2) {  // per task: [T, in * out]
      h = torch::baddbmm(b.unsqueeze(1), h.unsqueeze(1), W.view({T, in, out})).squeeze(1);
    } else {
      h = torch::addmm(b, h, W.view({in, out}));
    }
    if (l + 2 < dims_.size()) {
      if (spec_.layer_norm) {  // torch.nn.LayerNorm(out): eps 1e-5, biased variance, then scale and shift
        const Tensor& g = pieces[p++];
        const Tensor& s = pieces[p++];
        h = torch::layer_norm(h, {out}, {}, {}, 1e-5) * g + s;
      }
      h = torch::tanh(h);
    }
  }
  return amplitudes(h);
}

Tensor Policy::amplitudes(const Tensor& raw) const {
  if (spec_.output == "tanh") return torch::tanh(raw) * spec_.scale;
  const Tensor a = raw * spec_.scale;
  return spec_.clamp > 0 ? torch::clamp(a, -spec_.clamp, spec_.clamp) : a;
}

double Policy::amplitude_bound() const { return spec_.output == "tanh" ? spec_.scale : spec_.clamp; }

Tensor Policy::bound(const Tensor& amplitudes) const {
  const double b = amplitude_bound();
  return b > 0 ? torch::clamp(amplitudes, -b, b) : amplitudes;
}

}  // namespace qfleet::meta
