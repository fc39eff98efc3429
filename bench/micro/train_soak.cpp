// Soak of qfleet::train's runner (docs/training.md): 10^5 steps of a small hybrid job (a
// linear layer into a 2-qubit circuit layer, DeviceOptimizer Adam, metrics through the
// meter with sync_every = 100), resident memory sampled every 10^4 steps. Not a test:
// it prints the figures docs/training.md quotes. Usage: train_soak [steps] [sample_every]
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "qfleet/torch.hpp"
#include "qfleet/train.hpp"

namespace {

double rss_mib() {
  std::ifstream f("/proc/self/statm");
  long pages = 0, resident = 0;
  f >> pages >> resident;
  return double(resident) * double(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t steps = argc > 1 ? std::atoll(argv[1]) : 100000, every = argc > 2 ? std::atoll(argv[2]) : 10000;
  torch::set_num_threads(1);
  torch::manual_seed(0);
  qfleet::Circuit c(2);
  c.angle_embedding({0, 1}).strongly_entangling_layers({0, 1}, 1).expval("Z0").expval("Z1");
  auto pre = torch::nn::Linear(2, 2);
  pre->to(torch::kFloat64);
  qfleet::nn::QuantumLayer q(c, qfleet::nn::QuantumLayerOptions{qfleet::Precision::complex128, 1, 1});
  std::vector<torch::Tensor> params = pre->parameters();
  params.push_back(q->weight);
  qfleet::train::DeviceOptimizer opt(params, {.kind = qfleet::train::OptimizerKind::adam, .lr = 0.01});
  auto x = torch::zeros({8, 2}, torch::kFloat64);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(1);
  qfleet::train::RunnerOptions ro;
  ro.steps = steps;
  ro.sync_every = 100;
  qfleet::train::StepRunner runner(ro);
  std::printf("step,rss_mib,mean_loss\n");
  double first_rss = 0;
  runner.run([&](int64_t i) {
    x.copy_(torch::rand({8, 2}, gen, torch::kFloat64));
    opt.zero_grad();
    const auto loss = (q(pre(x)) - 0.3).square().mean();
    loss.backward();
    opt.step();
    if ((i + 1) % every == 0) {
      const double r = rss_mib();
      if (first_rss == 0) first_rss = r;
      const auto& rows = runner.meter().rows();
      std::printf("%lld,%.2f,%.6g\n", (long long)(i + 1), r, rows.empty() ? 0.0 : rows.back().means[0]);
      std::fflush(stdout);
    }
    return qfleet::train::Metrics{{"loss"}, {loss.detach()}};
  });
  std::printf("# host syncs %lld over %lld steps (%.4f per step); rss growth after the first sample %.2f MiB\n",
              (long long)runner.meter().host_syncs(), (long long)steps,
              double(runner.meter().host_syncs()) / double(steps), rss_mib() - first_rss);
  return 0;
}
