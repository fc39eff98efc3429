// The mixed-precision policy, autocast scope and GradScaler (qfleet/train.hpp).
//
// Why these choices: BF16 has FP32's exponent range, so it needs no loss scaling and is
// fast on tensor cores from compute capability 8 (Ampere) on; below that FP16 is the
// fast type and its narrow range needs dynamic loss scaling (Micikevicius et al.,
// "Mixed Precision Training", ICLR 2018). On the CPU autocast rarely pays for small
// networks, so FP32 is the default there.
#include <ATen/autocast_mode.h>

#include "qfleet/program.hpp"
#include "qfleet/train.hpp"

namespace qfleet::train {

PrecisionPolicy precision_policy(const torch::Device& device, int cc_major) {
  PrecisionPolicy p;
  p.device = device.type();
  if (device.is_cpu()) {
    p.rule = "cpu: float32 for the classical parts (no autocast); the engine in its program's precision";
    return p;
  }
  if (!device.is_cuda()) throw std::invalid_argument("precision policy: unknown device type " + device.str());
  if (cc_major < 0) {
    const int cc = qfleet::cuda_compute_capability(device.has_index() ? device.index() : 0);
    if (cc < 0) throw std::invalid_argument("precision policy: no CUDA device " + device.str() + " in this build");
    cc_major = cc / 10;
  }
  p.autocast = true;
  p.tf32 = cc_major >= 8;
  p.cudnn_benchmark = true;
  if (cc_major >= 8) {
    p.dtype = torch::kBFloat16;
    p.rule = "cuda compute capability " + std::to_string(cc_major) +
             " >= 8: bfloat16 autocast, TF32 on, cuDNN benchmark on; the engine in its program's precision";
  } else {
    p.dtype = torch::kHalf;
    p.grad_scaler = true;
    p.rule = "cuda compute capability " + std::to_string(cc_major) +
             " < 8: float16 autocast with loss scaling, cuDNN benchmark on; the engine in its program's precision";
  }
  return p;
}

void apply_backend_switches(const PrecisionPolicy& policy) {
  auto& ctx = at::globalContext();
  ctx.setAllowTF32CuBLAS(policy.tf32);
  ctx.setAllowTF32CuDNN(policy.tf32);
  ctx.setBenchmarkCuDNN(policy.cudnn_benchmark);
}

AutocastScope::AutocastScope(const PrecisionPolicy& policy)
    : active_(policy.autocast),
      device_(policy.device),
      was_enabled_(at::autocast::is_autocast_enabled(policy.device)),
      was_dtype_(at::autocast::get_autocast_dtype(policy.device)) {
  if (!active_) return;
  at::autocast::set_autocast_dtype(device_, policy.dtype);
  at::autocast::set_autocast_enabled(device_, true);
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  at::autocast::set_autocast_enabled(device_, was_enabled_);
  at::autocast::set_autocast_dtype(device_, was_dtype_);
  at::autocast::clear_cache();
}

GradScaler::GradScaler(GradScalerOptions options) : opt_(options) {
  if (!(opt_.init_scale > 0) || !(opt_.growth_factor > 1) || !(opt_.backoff_factor > 0 && opt_.backoff_factor < 1) ||
      opt_.growth_interval < 1) {
    throw std::invalid_argument(
        "GradScaler: needs init_scale > 0, growth_factor > 1, 0 < backoff_factor < 1 and growth_interval >= 1");
  }
}

torch::Tensor GradScaler::scale(const torch::Tensor& loss) {
  if (!opt_.enabled) return loss;
  if (!scale_.defined()) {
    const auto f32 = torch::TensorOptions().dtype(torch::kFloat).device(loss.device());
    // 0-dim, as torch.amp.GradScaler's: the scaled loss keeps the loss's shape and dtype.
    scale_ = torch::full({}, opt_.init_scale, f32);
    growth_tracker_ = torch::zeros({}, f32.dtype(torch::kInt));
  } else if (scale_.device() != loss.device()) {
    scale_ = scale_.to(loss.device());
    growth_tracker_ = growth_tracker_.to(loss.device());
  }
  return loss * scale_;
}

bool GradScaler::step(torch::optim::Optimizer& optimizer) {
  if (!opt_.enabled) {
    optimizer.step();
    return true;
  }
  if (!scale_.defined()) throw std::logic_error("GradScaler::step before scale(): nothing was scaled");
  found_inf_ = torch::zeros({}, scale_.options());
  const torch::Tensor inv_scale = scale_.to(torch::kDouble).reciprocal().to(torch::kFloat);
  for (auto& group : optimizer.param_groups())
    for (auto& p : group.params())
      if (p.grad().defined()) {
        std::vector<torch::Tensor> g{p.mutable_grad()};  // one per call: the kernel wants one dtype and device
        at::_amp_foreach_non_finite_check_and_unscale_(g, found_inf_, inv_scale.to(p.device()));
      }
  const bool clean = found_inf_.item<float>() == 0.0f;
  if (clean) optimizer.step();
  return clean;
}

void GradScaler::update() {
  if (!opt_.enabled || !found_inf_.defined()) return;
  at::_amp_update_scale_(scale_, growth_tracker_, found_inf_, opt_.growth_factor, opt_.backoff_factor,
                         opt_.growth_interval);
  found_inf_ = torch::Tensor();
}

double GradScaler::scale_value() const { return scale_.defined() ? scale_.item<double>() : opt_.init_scale; }

void GradScaler::save(torch::serialize::OutputArchive& archive) const {
  archive.write("scale", scale_.defined() ? scale_.cpu() : torch::full({}, opt_.init_scale, torch::kFloat));
  archive.write("growth_tracker", growth_tracker_.defined() ? growth_tracker_.cpu() : torch::zeros({}, torch::kInt));
}

void GradScaler::load(torch::serialize::InputArchive& archive) {
  torch::Tensor s, g;
  archive.read("scale", s);
  archive.read("growth_tracker", g);
  if (s.numel() != 1 || g.numel() != 1 || s.scalar_type() != torch::kFloat || g.scalar_type() != torch::kInt)
    throw std::runtime_error("GradScaler: the saved scale or growth tracker has the wrong shape or dtype");
  const torch::Device d = scale_.defined() ? scale_.device() : torch::Device(torch::kCPU);
  scale_ = s.to(d);
  growth_tracker_ = g.to(d);
}

}  // namespace qfleet::train
