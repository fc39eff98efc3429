// A data-parallel training job for tests/torch/test_distributed.cpp: a hybrid model
// (linear, circuit layer, linear) fitted with Adam on a global batch that the ranks
// split; gradients summed over ranks (qfleet::train::ProcessGroup), checkpoints from
// rank 0. Options: --steps N --out DIR [--nproc N] [--resume] [--die-at K] (rank 1
// exits with status 3 before step K: a rank that dies).
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "classifier.hpp"
#include "qfleet/torch.hpp"
#include "qfleet/train.hpp"

namespace tr = qfleet::train;

struct Model : torch::nn::Module {
  Model()
      : pre(register_module("pre", torch::nn::Linear(3, 3))),
        q(register_module("q", qfleet::nn::QuantumLayer(classifier(3, 2), qfleet::nn::QuantumLayerOptions{
                                                                               qfleet::Precision::complex128, 1, 5}))),
        post(register_module("post", torch::nn::Linear(3, 1))) {
    to(torch::kFloat64);
  }
  torch::Tensor forward(const torch::Tensor& x) { return post(q(pre(x))).squeeze(1); }
  torch::nn::Linear pre;
  qfleet::nn::QuantumLayer q;
  torch::nn::Linear post;
};

int main(int argc, char** argv) {
  int64_t steps = 8, die_at = -1, nproc = 1;
  bool resume = false;
  std::string out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--steps") steps = std::stoll(next());
    else if (a == "--out") out = next();
    else if (a == "--nproc") nproc = std::stoll(next());
    else if (a == "--die-at") die_at = std::stoll(next());
    else if (a == "--resume") resume = true;
  }
  try {
    auto dist = tr::dist_from_env();
    if (!dist && nproc > 1) {  // the launcher: run nproc ranks of this command line
      std::string report;
      const int rc = tr::launch_local(static_cast<int>(nproc), &report);
      std::cerr << report;
      return rc;
    }
    tr::ProcessGroup pg(dist.value_or(tr::DistOptions{}));
    torch::manual_seed(1);
    Model model;
    torch::optim::Adam adam(model.parameters(), torch::optim::AdamOptions(0.05));
    auto data = at::make_generator<at::CPUGeneratorImpl>(77);
    tr::TrainState state;
    state.config = "train_worker global_batch=16";
    state.modules = {{"model", &model}};
    state.optimizers = {{"adam", &adam}};
    state.generators = {{"data", data}};
    const std::string ck = (std::filesystem::path(out) / "ck.pt").string();
    if (resume) tr::load_checkpoint(ck, state);
    const int64_t global = 16;
    for (int64_t s = state.step; s < steps; ++s) {
      if (s == die_at && pg.rank() == 1) std::exit(3);
      const auto x = torch::randn({global, 3}, data, torch::kFloat64);  // the same on every rank
      const auto y = x.sum(1).sin();
      // Four shards of four samples: the reduction order is the same on 1, 2 or 4 ranks.
      tr::data_parallel_backward(pg, model.parameters(), 4, [&](int64_t k) {
        const auto xs = x.narrow(0, 4 * k, 4), ys = y.narrow(0, 4 * k, 4);
        return (model.forward(xs) - ys).square().sum() / double(global);
      });
      adam.step();
      state.step = s + 1;
      if (pg.rank() == 0) tr::save_checkpoint(ck, state);
    }
    if (pg.rank() == 0) {
      torch::serialize::OutputArchive ar;
      const auto params = model.parameters();
      for (std::size_t i = 0; i < params.size(); ++i) ar.write("p" + std::to_string(i), params[i]);
      ar.save_to((std::filesystem::path(out) / "final.pt").string());
    }
    pg.barrier();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "train_worker: " << e.what() << "\n";
    return 1;
  }
}
