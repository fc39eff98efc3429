// The device-distinguishability tournament (tournament.hpp).
#include "tournament.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <random>

#include "circuits.hpp"
#include "qfleet/device_lowering.hpp"
#include "distributions.hpp"
#include "json_io.hpp"
#include "qfleet/json_problem.hpp"
#include "qfleet/program.hpp"
#include "qfleet/train.hpp"
#include "qgan_devices.hpp"  // generated: the embedded default devices (apps/qgan/devices/*.json)
#include "common/report_header.hpp"

namespace qfleet::qgan {
namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

std::vector<std::string> embedded_device_names() {
  std::vector<std::string> names;
  for (const auto& d : kEmbeddedDevices) names.emplace_back(d.name);
  return names;
}

std::vector<TournamentDevice> tournament_devices(const TournamentConfig& c) {
  std::vector<TournamentDevice> out;
  if (c.noiseless) out.push_back({"noiseless", "noiseless", "exact state vector", std::nullopt});
  if (c.device_files.empty()) {
    for (const auto& d : kEmbeddedDevices) {
      NoiseModel m = json_problem::parse_noise_model(json::parse(d.json));
      out.push_back({m.name, "noise_model", std::string("embedded: ") + d.source, m});
    }
  } else {
    for (const auto& f : c.device_files) {
      NoiseModel m = read_noise_model_file(f);
      if (m.name.empty()) m.name = fs::path(f).stem().string();
      out.push_back({m.name, "noise_model", f, m});
    }
  }
  for (std::size_t i = 0; i < out.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (out[i].name == out[j].name) throw std::invalid_argument("two devices are named \"" + out[i].name + "\"");
  if (out.size() < 2) throw std::invalid_argument("a tournament needs at least two devices");
  return out;
}

std::vector<TournamentCircuit> tournament_circuits(const TournamentConfig& c) {
  const int n = c.qubits;
  std::vector<TournamentCircuit> out;
  out.push_back({"ghz", "GHZ state on " + std::to_string(n) + " qubits (H, CNOT chain)", ghz_circuit(n)});
  const uint64_t value = ((uint64_t{1} << n) - 1) / 3;  // 0101...: half the bits set
  out.push_back({"qft", "inverse QFT of the Fourier state of " + std::to_string(value) + " (" + std::to_string(n) +
                            " qubits; ideally that outcome with certainty)",
                 qft_circuit(n, value)});
  for (int r = 0; r < c.random_circuits; ++r) {
    const uint64_t s = c.seed * 1000 + uint64_t(r);
    out.push_back({"random_" + std::to_string(r + 1),
                   "random layered: " + std::to_string(c.random_layers) + " layers of random RX/RY/RZ and brickwork CNOTs (seed " +
                       std::to_string(s) + ")",
                   random_layered_circuit(n, c.random_layers, s)});
  }
  if (!c.generator_report.empty()) {
    const json r = read_json_file(c.generator_report);
    try {
      const json& g = r.at("generator");
      const GeneratorOptions o{g.at("n_qubits").get<int>(), g.at("reps").get<int>()};
      const auto w = g.at("weights").get<std::vector<double>>();
      if (int(w.size()) != generator_weights(o))
        throw std::invalid_argument("generator.weights has " + std::to_string(w.size()) + " entries, the ansatz " +
                                    std::to_string(generator_weights(o)));
      out.push_back({"qgan_generator",
                     "the trained qGAN generator of " + c.generator_report + " (" + std::to_string(o.qubits) + " qubits, " +
                         std::to_string(o.reps) + " reps, target " + r.at("target").at("name").get<std::string>() + ")",
                     bind_weights(generator_circuit(o), w)});
    } catch (const json::exception& e) {
      throw std::invalid_argument(c.generator_report + ": not a qfleet-qgan report (" + e.what() + ")");
    }
  }
  return out;
}

DeviceRun run_on_device(const TournamentCircuit& circuit, const TournamentDevice& device, int64_t shots, uint64_t seed,
                        int threads) {
  const auto t0 = Clock::now();
  CompileOptions opt;
  opt.num_threads = threads;
  DeviceRun r;
  Program prog = [&] {
    if (!device.model) {
      r.info = {{"simulator", "statevector"}};
      return compile(circuit.circuit, opt);
    }
    const LoweredCircuit low = lower_to_device(circuit.circuit, *device.model);
    r.info = {{"simulator", "density_matrix"},
              {"physical_qubits", low.physical},
              {"swaps", low.swaps},
              {"one_qubit_gates", low.one_qubit_gates},
              {"two_qubit_gates", low.two_qubit_gates}};
    return compile(apply_noise_model(low.circuit, low.model), opt);
  }();
  r.probabilities = prog.forward(BatchArgs<double>{1, {}, {}});
  // Rounding leaves |entries| of 1e-17 below zero; the statistics want probabilities.
  for (double& p : r.probabilities) p = std::max(p, 0.0);
  if (shots > 0) {
    r.samples.resize(std::size_t(shots));
    // On the measured wires, in their order: after routing the device's wires are a
    // permutation of the circuit's, and the samples must index the same outcomes as the
    // probabilities do.
    const auto& measured = prog.circuit().measurements().at(0).wires;
    prog.sample<double>(BatchArgs<double>{1, {}, {}}, measured, std::size_t(shots), seed, std::span<uint64_t>(r.samples));
  }
  r.info["seconds"] = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

namespace {

json estimate_json(const Estimate& e) {
  return {{"value", e.value}, {"low", e.low}, {"high", e.high}, {"plug_in", e.plug_in}};
}

using Runs = std::vector<std::vector<DeviceRun>>;  // [circuit][device]

// Every device runs every circuit.
Runs run_all(const TournamentConfig& c, const std::vector<TournamentDevice>& devices,
             const std::vector<TournamentCircuit>& circuits) {
  const std::size_t D = devices.size(), C = circuits.size();
  Runs runs(C, std::vector<DeviceRun>(D));
  train::ProgressBar bar;
  const int64_t total = int64_t(C * D);
  for (std::size_t ci = 0; ci < C; ++ci)
    for (std::size_t di = 0; di < D; ++di) {
      runs[ci][di] = run_on_device(circuits[ci], devices[di], c.shots, c.seed * 7919 + ci * 131 + di, c.threads);
      if (c.progress) bar.update(int64_t(ci * D + di + 1), total, circuits[ci].name + " on " + devices[di].name);
    }
  if (c.progress) bar.finish();
  return runs;
}

// What the pairs of devices give, per circuit and as means over the circuits.
struct PairStats {
  std::vector<std::vector<std::vector<double>>> js;       // [circuit][a][b]: exact JS distance
  std::vector<std::vector<std::vector<Estimate>>> js_est;  // [circuit][a][b]: finite-shot bootstrap
  std::vector<std::vector<double>> tv_mean, js_mean, log_shots;  // [a][b]
  int covered = 0, estimated = 0;                          // exact values inside their intervals
};

// Pairs: exact statistics, shots to distinguish, finite-shot estimates (into out["pairs"]).
PairStats compare_pairs(const TournamentConfig& c, const std::vector<TournamentDevice>& devices,
                        const std::vector<TournamentCircuit>& circuits, const Runs& runs, json& out) {
  const std::size_t D = devices.size(), C = circuits.size();
  std::mt19937_64 rng(c.seed ^ 0x5851F42D4C957F2Dull);
  PairStats st;
  st.js.assign(C, std::vector<std::vector<double>>(D, std::vector<double>(D, 0.0)));
  st.js_est.assign(C, std::vector<std::vector<Estimate>>(D, std::vector<Estimate>(D)));
  st.tv_mean.assign(D, std::vector<double>(D, 0.0)), st.js_mean = st.tv_mean, st.log_shots = st.tv_mean;
  for (std::size_t ci = 0; ci < C; ++ci) {
    const std::size_t k = runs[ci][0].probabilities.size();
    for (std::size_t a = 0; a < D; ++a)
      for (std::size_t b = a + 1; b < D; ++b) {
        const auto& p = runs[ci][a].probabilities;
        const auto& q = runs[ci][b].probabilities;
        const ShotsToDistinguish s = shots_to_distinguish(p, q, c.confidence);
        json pair = {{"circuit", circuits[ci].name},
                     {"a", devices[a].name},
                     {"b", devices[b].name},
                     {"kl_ab", number(kl_divergence(p, q))},
                     {"kl_ba", number(kl_divergence(q, p))},
                     {"js_distance", js_distance(p, q)},
                     {"total_variation", total_variation(p, q)},
                     {"bhattacharyya", bhattacharyya(p, q)},
                     {"shots_to_distinguish",
                      {{"distinguishable", s.distinguishable}, {"shots", s.shots}, {"bound", s.bound},
                       {"alpha", s.alpha}, {"beta", s.beta}, {"capped", s.shots >= kMaxShots}}}};
        auto& js = st.js[ci];
        js[a][b] = js[b][a] = pair["js_distance"].get<double>();
        st.js_mean[a][b] += js[a][b] / double(C);
        st.tv_mean[a][b] += pair["total_variation"].get<double>() / double(C);
        st.log_shots[a][b] += (s.distinguishable ? std::log10(double(s.shots)) : INFINITY) / double(C);
        if (c.shots > 0) {
          const auto& sa = runs[ci][a].samples;
          const auto& sb = runs[ci][b].samples;
          const Estimate ej = bootstrap(sa, sb, k, js_distance, c.resamples, c.level, rng);
          const Estimate et = bootstrap(sa, sb, k, total_variation, c.resamples, c.level, rng);
          st.js_est[ci][a][b] = st.js_est[ci][b][a] = ej;
          st.covered += (ej.low <= js[a][b] && js[a][b] <= ej.high) ? 1 : 0;
          ++st.estimated;
          pair["finite_shots"] = {{"shots", c.shots}, {"resamples", c.resamples}, {"level", c.level},
                                  {"js_distance", estimate_json(ej)}, {"total_variation", estimate_json(et)}};
        }
        out["pairs"].push_back(pair);
      }
  }
  for (std::size_t a = 0; a < D; ++a)
    for (std::size_t b = 0; b < a; ++b) {
      st.js_mean[a][b] = st.js_mean[b][a];
      st.tv_mean[a][b] = st.tv_mean[b][a];
      st.log_shots[a][b] = st.log_shots[b][a];
    }
  return st;
}

json matrix_json(const std::vector<TournamentDevice>& devices, const PairStats& st) {
  json names = json::array();
  for (const auto& d : devices) names.push_back(d.name);
  json ls = json::array();
  for (const auto& row : st.log_shots) {
    json r = json::array();
    for (double v : row) r.push_back(number(v));
    ls.push_back(r);
  }
  return {{"devices", names}, {"js_distance", st.js_mean}, {"total_variation", st.tv_mean}, {"log10_shots", ls},
          {"how", "means over the circuits; log10_shots is the mean of log10(shots to distinguish)"}};
}

// Round robin among the noisy devices: in each circuit a device beats another when its
// distribution is closer (JS distance) to the noiseless reference's (device r); a draw
// when the two finite-shot bootstrap intervals of those distances overlap (the shots
// cannot tell).
json ranking(const TournamentConfig& c, const std::vector<TournamentDevice>& devices, std::size_t r,
             const PairStats& st) {
  const std::size_t D = devices.size(), C = st.js.size();
  struct Row {
    std::size_t d;
    int wins = 0, losses = 0, draws = 0;
    double points = 0, mean_js = 0;
  };
  std::vector<Row> rows;
  for (std::size_t d = 0; d < D; ++d)
    if (d != r) rows.push_back({d});
  for (auto& x : rows)
    for (std::size_t ci = 0; ci < C; ++ci) x.mean_js += st.js[ci][x.d][r] / double(C);
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t j = i + 1; j < rows.size(); ++j)
      for (std::size_t ci = 0; ci < C; ++ci) {
        const std::size_t a = rows[i].d, b = rows[j].d;
        const auto& js = st.js[ci];
        bool draw = js[a][r] == js[b][r];
        if (c.shots > 0) {
          const Estimate &ea = st.js_est[ci][a][r], &eb = st.js_est[ci][b][r];
          draw = draw || (ea.low <= eb.high && eb.low <= ea.high);
        }
        if (draw) {
          rows[i].draws++, rows[j].draws++;
          rows[i].points += 0.5, rows[j].points += 0.5;
        } else if (js[a][r] < js[b][r]) {
          rows[i].wins++, rows[j].losses++, rows[i].points += 1;
        } else {
          rows[j].wins++, rows[i].losses++, rows[j].points += 1;
        }
      }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& x, const Row& y) {
    return x.points != y.points ? x.points > y.points : x.mean_js < y.mean_js;
  });
  json out = json::array();
  int rank = 0;
  for (const auto& x : rows)
    out.push_back({{"rank", ++rank}, {"device", devices[x.d].name}, {"wins", x.wins}, {"losses", x.losses},
                   {"draws", x.draws}, {"points", x.points}, {"mean_js_to_reference", x.mean_js}});
  return out;
}

}  // namespace

json run_tournament(const TournamentConfig& c) {
  validate(c);
  const app::RunClock clock;
  const auto devices = tournament_devices(c);
  const auto circuits = tournament_circuits(c);
  const Runs runs = run_all(c, devices, circuits);

  json out = app::report_header("qfleet-qgan tournament", c.to_json(), c.seed, clock);
  out["confidence"] = c.confidence;
  for (const auto& d : devices) out["devices"].push_back({{"name", d.name}, {"kind", d.kind}, {"source", d.source}});
  json dists = json::object();
  for (std::size_t ci = 0; ci < circuits.size(); ++ci) {
    const int n = circuits[ci].circuit.n_qubits();
    out["circuits"].push_back({{"name", circuits[ci].name}, {"n_qubits", n}, {"description", circuits[ci].description}});
    for (std::size_t di = 0; di < devices.size(); ++di) {
      dists[circuits[ci].name][devices[di].name] = runs[ci][di].probabilities;
      out["runs"][circuits[ci].name][devices[di].name] = runs[ci][di].info;
    }
  }
  out["distributions"] = dists;
  const PairStats st = compare_pairs(c, devices, circuits, runs, out);
  out["matrix"] = matrix_json(devices, st);
  const auto ref = std::find_if(devices.begin(), devices.end(), [](const auto& d) { return d.kind == "noiseless"; });
  if (ref == devices.end()) {
    out["ranking"] = nullptr;
    out["ranking_note"] = "no noiseless reference device: nothing to rank against";
  } else {
    out["ranking"] = ranking(c, devices, std::size_t(ref - devices.begin()), st);
    out["ranking_rule"] = "per circuit and pair: the device closer to the noiseless reference (JS distance) wins 1 point; "
                          "a draw (0.5 each) when the finite-shot bootstrap intervals of the two distances overlap";
  }
  if (st.estimated > 0)
    out["bootstrap_coverage"] = {{"pairs", st.estimated}, {"exact_inside_interval", st.covered},
                                 {"note", "bias-corrected basic bootstrap intervals; the plug-in distances are biased upwards "
                                          "for close distributions and the correction is first-order, so close pairs are "
                                          "covered less often than the nominal level"}};
  out["seconds"] = out["wall_seconds"];
  fs::create_directories(c.out);
  train::write_file_atomic((fs::path(c.out) / "tournament.json").string(), json_problem::dump(out, 1));
  return out;
}

}  // namespace qfleet::qgan
