// An independent reference for the JSON contract: a plain dense state-vector
// simulator (Eigen) that interprets a problem's JSON itself, with every gate and
// template written out from PennyLane's definitions. It shares no code with
// qfleet: only nlohmann::json to read the problem. Gradients are central finite
// differences of this reference.
//
// Conventions (PennyLane): wire 0 is the most significant bit of a basis index; a
// gate's matrix is indexed with its first wire most significant; controls first.
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

namespace qfleet_ref {

using cd = std::complex<double>;
using Mat = Eigen::MatrixXcd;
using Vec = Eigen::VectorXcd;
using nlohmann::json;
inline const cd I1{0.0, 1.0};

inline Mat mat2(cd a, cd b, cd c, cd d) {
  Mat m(2, 2);
  m << a, b, c, d;
  return m;
}
inline Mat rx(double t) {
  return mat2(std::cos(t / 2), -I1 * std::sin(t / 2), -I1 * std::sin(t / 2), std::cos(t / 2));
}
inline Mat ry(double t) {
  return mat2(std::cos(t / 2), -std::sin(t / 2), std::sin(t / 2), std::cos(t / 2));
}
inline Mat rz(double t) {
  return mat2(std::exp(-I1 * (t / 2)), 0.0, 0.0, std::exp(I1 * (t / 2)));
}
inline Mat phase(double t) {
  return mat2(1.0, 0.0, 0.0, std::exp(I1 * t));
}
inline Mat rot(double phi, double theta, double omega) {
  return rz(omega) * ry(theta) * rz(phi);
}
inline Mat controlled(const Mat& u) {  // |0><0| (x) I + |1><1| (x) U, control first
  const auto d = u.rows();
  Mat m = Mat::Identity(2 * d, 2 * d);
  m.block(d, d, d, d) = u;
  return m;
}
inline Mat pauli(char p) {
  switch (p) {
    case 'X':
      return mat2(0.0, 1.0, 1.0, 0.0);
    case 'Y':
      return mat2(0.0, -I1, I1, 0.0);
    case 'Z':
      return mat2(1.0, 0.0, 0.0, -1.0);
    default:
      return Mat::Identity(2, 2);
  }
}

// The matrix of a named gate with its (already evaluated) parameters.
inline Mat gate_matrix(const std::string& name, const std::vector<double>& p) {
  // qfleet's documented short aliases.
  const std::string g = name == "H"    ? "Hadamard"
                        : name == "CX" ? "CNOT"
                        : name == "X"  ? "PauliX"
                        : name == "Y"  ? "PauliY"
                        : name == "Z"  ? "PauliZ"
                        : name == "I"  ? "Identity"
                                       : name;
  const double r2 = 1.0 / std::sqrt(2.0);
  if (g == "Identity") return Mat::Identity(2, 2);
  if (g == "Hadamard") return mat2(r2, r2, r2, -r2);
  if (g == "PauliX") return pauli('X');
  if (g == "PauliY") return pauli('Y');
  if (g == "PauliZ") return pauli('Z');
  if (g == "S") return mat2(1.0, 0.0, 0.0, I1);
  if (g == "T") return mat2(1.0, 0.0, 0.0, std::exp(I1 * (M_PI / 4)));
  if (g == "RX") return rx(p.at(0));
  if (g == "RY") return ry(p.at(0));
  if (g == "RZ") return rz(p.at(0));
  if (g == "PhaseShift") return phase(p.at(0));
  if (g == "Rot") return rot(p.at(0), p.at(1), p.at(2));
  if (g == "CNOT") return controlled(pauli('X'));
  if (g == "CY") return controlled(pauli('Y'));
  if (g == "CZ") return controlled(pauli('Z'));
  if (g == "CRX") return controlled(rx(p.at(0)));
  if (g == "CRY") return controlled(ry(p.at(0)));
  if (g == "CRZ") return controlled(rz(p.at(0)));
  if (g == "ControlledPhaseShift") return controlled(phase(p.at(0)));
  if (g == "SWAP") {
    Mat m = Mat::Zero(4, 4);
    m(0, 0) = m(1, 2) = m(2, 1) = m(3, 3) = 1.0;
    return m;
  }
  if (g == "IsingZZ") {
    const cd a = std::exp(-I1 * (p.at(0) / 2)), b = std::exp(I1 * (p.at(0) / 2));
    Mat m = Mat::Zero(4, 4);
    m(0, 0) = a;
    m(1, 1) = b;
    m(2, 2) = b;
    m(3, 3) = a;
    return m;
  }
  if (g == "Toffoli") return controlled(controlled(pauli('X')));
  throw std::runtime_error("reference: gate not modelled: " + g);
}

// Applies a 2^k x 2^k matrix to `wires` of an n-qubit state.
inline void apply(Vec& psi, int n, const Mat& u, const std::vector<int>& wires) {
  const int k = static_cast<int>(wires.size());
  const std::uint64_t dim = std::uint64_t{1} << n;
  std::uint64_t mask = 0;
  for (int w : wires) mask |= std::uint64_t{1} << (n - 1 - w);
  auto spread = [&](std::uint64_t base, std::uint64_t j) {  // local index j -> global
    std::uint64_t i = base;
    for (int t = 0; t < k; ++t) {
      if ((j >> (k - 1 - t)) & 1) i |= std::uint64_t{1} << (n - 1 - wires[t]);
    }
    return i;
  };
  Vec out = psi;
  for (std::uint64_t base = 0; base < dim; ++base) {
    if (base & mask) continue;
    for (std::uint64_t r = 0; r < (std::uint64_t{1} << k); ++r) {
      cd s = 0;
      for (std::uint64_t c = 0; c < (std::uint64_t{1} << k); ++c)
        s += u(r, c) * psi(spread(base, c));
      out(spread(base, r)) = s;
    }
  }
  psi = out;
}

struct Sample {
  std::vector<double> x;  // inputs row
  std::vector<double> w;  // weights (this sample's)
};

inline double param_value(const json& p, const Sample& s) {
  if (p.is_number()) return p.get<double>();
  const double scale = p.value("scale", 1.0);
  if (p.contains("input")) return scale * s.x.at(p["input"].get<std::size_t>());
  return scale * s.w.at(p["weight"].get<std::size_t>());
}

inline Mat rotation(const std::string& r, double t) {
  if (r == "X" || r == "RX") return rx(t);
  if (r == "Y" || r == "RY") return ry(t);
  return rz(t);
}

// The final state of one sample.
inline Vec final_state(const json& problem, const Sample& s) {
  const int n = problem["qubits"].get<int>();
  Vec psi = Vec::Zero(std::int64_t{1} << n);
  psi(0) = 1.0;
  for (const json& op : problem.value("ops", json::array())) {
    const std::vector<int> wires = op["wires"].get<std::vector<int>>();
    if (op.contains("gate")) {
      const std::string g = op["gate"].get<std::string>();
      if (g == "QubitUnitary") {
        const auto d = static_cast<Eigen::Index>(op["matrix"].size());
        Mat u(d, d);
        for (Eigen::Index r = 0; r < d; ++r) {
          for (Eigen::Index c = 0; c < d; ++c) {
            const json& z = op["matrix"][static_cast<std::size_t>(r)][static_cast<std::size_t>(c)];
            u(r, c) = cd(z[0].get<double>(), z[1].get<double>());
          }
        }
        apply(psi, n, u, wires);
        continue;
      }
      std::vector<double> p;
      for (const json& q : op.value("params", json::array())) p.push_back(param_value(q, s));
      apply(psi, n, gate_matrix(g, p), wires);
      continue;
    }
    const std::string t = op["template"].get<std::string>();
    const int nw = static_cast<int>(wires.size());
    if (t == "AngleEmbedding") {
      const int f = op.value("first_input", 0);
      for (int i = 0; i < nw; ++i)
        apply(psi, n, rotation(op.value("rotation", "X"), s.x.at(f + i)), {wires[i]});
    } else if (t == "AmplitudeEmbedding") {
      // Amplitudes on `wires` (first wire most significant), every other wire |0>.
      const std::size_t cap = std::size_t{1} << nw;
      const int f = op.value("first_input", 0);
      const int nf = op.value("n_features", static_cast<int>(cap));
      std::vector<double> a(cap, op.value("pad_with", 0.0));
      for (int j = 0; j < nf; ++j) a[j] = s.x.at(f + j);
      double norm = 0;
      for (double v : a) norm += v * v;
      if (op.value("normalize", false)) {
        for (double& v : a) v /= std::sqrt(norm);
      }
      psi.setZero();
      for (std::size_t j = 0; j < cap; ++j) {
        std::uint64_t i = 0;
        for (int q = 0; q < nw; ++q) {
          if ((j >> (nw - 1 - q)) & 1) i |= std::uint64_t{1} << (n - 1 - wires[q]);
        }
        psi(static_cast<Eigen::Index>(i)) = a[j];
      }
    } else if (t == "BasicEntanglerLayers") {
      const int layers = op["layers"].get<int>();
      const int f = op.value("first_weight", 0);
      for (int l = 0; l < layers; ++l) {
        for (int i = 0; i < nw; ++i)
          apply(psi, n, rotation(op.value("rotation", "X"), s.w.at(f + l * nw + i)), {wires[i]});
        if (nw == 2) apply(psi, n, gate_matrix("CNOT", {}), {wires[0], wires[1]});
        if (nw > 2) {
          for (int i = 0; i < nw; ++i)
            apply(psi, n, gate_matrix("CNOT", {}), {wires[i], wires[(i + 1) % nw]});
        }
      }
    } else if (t == "StronglyEntanglingLayers") {
      const int layers = op["layers"].get<int>();
      const int f = op.value("first_weight", 0);
      const std::string imp = op.value("imprimitive", "CNOT");
      for (int l = 0; l < layers; ++l) {
        for (int i = 0; i < nw; ++i) {
          const int b = f + (l * nw + i) * 3;
          apply(psi, n, rot(s.w.at(b), s.w.at(b + 1), s.w.at(b + 2)), {wires[i]});
        }
        const int r = op.contains("ranges") ? op["ranges"][l].get<int>() : (l % (nw - 1)) + 1;
        if (nw > 1) {
          for (int i = 0; i < nw; ++i)
            apply(psi, n, gate_matrix(imp, {}), {wires[i], wires[(i + r) % nw]});
        }
      }
    } else {
      throw std::runtime_error("reference: template not modelled: " + t);
    }
  }
  return psi;
}

// <psi| sum_t c_t P_t |psi> for an observable given as [[c, "X0 Z1"], ...].
inline double expval(const Vec& psi, int n, const json& obs) {
  double total = 0;
  for (const json& term : obs) {
    Vec phi = psi;
    const std::string word = term[1].get<std::string>();
    for (std::size_t i = 0; i < word.size();) {
      if (word[i] == ' ') {
        ++i;
        continue;
      }
      const char letter = word[i++];
      std::size_t j = i;
      while (j < word.size() && std::isdigit(static_cast<unsigned char>(word[j]))) ++j;
      if (j > i) apply(phi, n, pauli(letter), {std::stoi(word.substr(i, j - i))});
      i = j;
    }
    total += term[0].get<double>() * psi.dot(phi).real();  // dot conjugates psi
  }
  return total;
}

// Marginal probabilities on `wires` (first wire most significant).
inline std::vector<double> probs(const Vec& psi, int n, const std::vector<int>& wires) {
  const int k = static_cast<int>(wires.size());
  std::vector<double> p(std::size_t{1} << k, 0.0);
  for (Eigen::Index i = 0; i < psi.size(); ++i) {
    std::size_t j = 0;
    for (int t = 0; t < k; ++t)
      j = (j << 1) | ((static_cast<std::uint64_t>(i) >> (n - 1 - wires[t])) & 1);
    p[j] += std::norm(psi(i));
  }
  return p;
}

// All outputs of one sample, in the contract's order: each observable, then each
// probs measurement's entries.
inline std::vector<double> outputs(const json& problem, const Sample& s) {
  const int n = problem["qubits"].get<int>();
  const Vec psi = final_state(problem, s);
  std::vector<double> out;
  for (const json& obs : problem.value("observables", json::array()))
    out.push_back(expval(psi, n, obs));
  if (problem.contains("probs")) {
    const json& pr = problem["probs"];
    std::vector<std::vector<int>> lists;
    if (pr[0].is_array()) {
      for (const json& l : pr) lists.push_back(l.get<std::vector<int>>());
    } else {
      lists.push_back(pr.get<std::vector<int>>());
    }
    for (const auto& l : lists) {
      const auto p = probs(psi, n, l);
      out.insert(out.end(), p.begin(), p.end());
    }
  }
  return out;
}

// The samples of a problem: inputs rows, shared or per-sample weights.
inline std::vector<Sample> samples(const json& problem) {
  std::vector<Sample> out;
  const json inputs = problem.value("inputs", json::array());
  const json weights = problem.value("weights", json::array());
  const bool per_sample = !weights.empty() && weights[0].is_array();
  std::size_t batch = 1;
  if (!inputs.empty()) {
    batch = inputs.size();
  } else if (per_sample) {
    batch = weights.size();
  }
  for (std::size_t b = 0; b < batch; ++b) {
    Sample s;
    if (!inputs.empty()) s.x = inputs[b].get<std::vector<double>>();
    s.w = per_sample ? weights[b].get<std::vector<double>>() : weights.get<std::vector<double>>();
    out.push_back(s);
  }
  return out;
}

// d outputs / d (x_i) and d outputs / d (w_j) of one sample, by central differences:
// jac_x[k][i], jac_w[k][j].
inline void jacobians(const json& problem, Sample s, std::vector<std::vector<double>>& jac_x,
                      std::vector<std::vector<double>>& jac_w, double h = 1e-6) {
  const std::size_t K = outputs(problem, s).size();
  auto column = [&](std::vector<double>& v, std::size_t i, std::vector<std::vector<double>>& jac) {
    const double keep = v[i];
    v[i] = keep + h;
    const auto up = outputs(problem, s);
    v[i] = keep - h;
    const auto down = outputs(problem, s);
    v[i] = keep;
    for (std::size_t k = 0; k < K; ++k) jac[k][i] = (up[k] - down[k]) / (2 * h);
  };
  jac_x.assign(K, std::vector<double>(s.x.size()));
  jac_w.assign(K, std::vector<double>(s.w.size()));
  for (std::size_t i = 0; i < s.x.size(); ++i) column(s.x, i, jac_x);
  for (std::size_t j = 0; j < s.w.size(); ++j) column(s.w, j, jac_w);
}

}  // namespace qfleet_ref
