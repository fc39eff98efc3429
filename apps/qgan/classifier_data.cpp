// qfleet-qgan classify's configuration, records and network (classifier.hpp).
#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "classifier.hpp"

namespace qfleet::qgan {
using json = nlohmann::json;

namespace {

TournamentConfig tournament_settings(const ClassifierConfig& c) {
  TournamentConfig t;
  t.device_files = c.device_files;
  t.noiseless = c.noiseless;
  t.qubits = c.qubits;
  t.random_layers = c.random_layers;
  t.seed = c.seed;
  t.threads = c.threads;
  t.random_circuits = 0;
  if (c.circuit.rfind("random_", 0) == 0) {
    const std::string n = c.circuit.substr(7);
    if (n.empty() || n.size() > 3 || !std::all_of(n.begin(), n.end(), [](char ch) { return ch >= '0' && ch <= '9'; }) ||
        std::stoi(n) < 1)
      throw std::invalid_argument("circuit \"" + c.circuit + "\": random_N with N = 1, 2, ...");
    t.random_circuits = std::stoi(n);
  }
  if (c.circuit == "qgan_generator") t.generator_report = c.generator_report;
  return t;
}

}  // namespace

ClassifierData classifier_distributions(const ClassifierConfig& c) {
  const auto t0 = std::chrono::steady_clock::now();
  const TournamentConfig t = tournament_settings(c);
  ClassifierData d;
  d.devices = tournament_devices(t);
  bool found = false;
  std::string names;
  for (auto& circ : tournament_circuits(t)) {
    names += (names.empty() ? "" : ", ") + circ.name;
    if (circ.name == c.circuit) d.circuit = std::move(circ), found = true;
  }
  if (!found) throw std::invalid_argument("circuit \"" + c.circuit + "\": one of ghz, qft, random_N, qgan_generator");
  d.device_runs = json::array();
  for (const auto& dev : d.devices) {
    DeviceRun r = run_on_device(d.circuit, dev, 0, 0, c.threads);
    d.probabilities.push_back(std::move(r.probabilities));
    r.info["name"] = dev.name;
    d.device_runs.push_back(r.info);
  }
  d.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return d;
}

Records draw_records(const ClassifierData& data, int64_t shots, int64_t per_device, uint64_t seed, int threads) {
  const auto K = int64_t(data.devices.size()), M = int64_t(data.probabilities.at(0).size());
  Records r{torch::zeros({K * per_device, M}, torch::kInt32), torch::empty({K * per_device}, torch::kInt64)};
  for (int64_t k = 0; k < K; ++k) {
    const DeviceRun run =
        run_on_device(data.circuit, data.devices[std::size_t(k)], shots * per_device, seed * 1000003 + uint64_t(k), threads);
    auto* counts = r.counts.data_ptr<int32_t>() + k * per_device * M;
    for (int64_t i = 0; i < shots * per_device; ++i) {
      const uint64_t x = run.samples[std::size_t(i)];
      if (x >= uint64_t(M)) throw std::logic_error("an outcome outside the circuit's range");
      ++counts[(i / shots) * M + int64_t(x)];
    }
    r.labels.narrow(0, k * per_device, per_device).fill_(k);
  }
  return r;
}

torch::nn::Sequential make_classifier(int64_t outcomes, const std::vector<int64_t>& hidden, int64_t devices) {
  torch::nn::Sequential net;
  int64_t w = outcomes;
  for (int64_t h : hidden) {
    net->push_back(torch::nn::Linear(w, h));
    net->push_back(torch::nn::ReLU());
    w = h;
  }
  net->push_back(torch::nn::Linear(w, devices));
  return net;
}

}  // namespace qfleet::qgan
