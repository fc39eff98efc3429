// The circuit builder's noise: channels, Kraus operators, readout errors and the
// purity output (include/qfleet/circuit.hpp). Every check runs before the circuit
// changes, so a rejected call leaves it as it was.
#include <algorithm>
#include <cmath>
#include <complex>
#include <string>

#include "core/dm_compiled.hpp"
#include "qfleet/circuit.hpp"
#include "qfleet/error.hpp"

namespace qfleet {

namespace {
std::string wire_list(const std::vector<int>& w) {
  std::string s = "[";
  for (std::size_t i = 0; i < w.size(); ++i) s += (i ? ", " : "") + std::to_string(w[i]);
  return s + "]";
}
}  // namespace

Circuit& Circuit::channel(Channel ch, const std::vector<int>& wires, const std::vector<Param>& params) {
  if (ch == Channel::None) throw Error("Channel::None is not a channel");
  if (ch == Channel::Kraus) throw Error("a Kraus channel needs its operators: use Circuit::kraus(wires, operators)");
  const ChannelInfo& info = channel_info(ch);
  const std::string what(info.name);
  if (static_cast<int>(wires.size()) != info.wires) {
    throw Error(what + " acts on " + std::to_string(info.wires) + " wire(s), got " + std::to_string(wires.size()) +
                " " + wire_list(wires));
  }
  check_wires(wires, what);
  if (static_cast<int>(params.size()) != info.params) {
    throw Error(what + " takes " + std::to_string(info.params) + " parameter(s), got " +
                std::to_string(params.size()));
  }
  bool all_constant = true;
  double values[kMaxChannelParams] = {0, 0, 0, 0};
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Param& p = params[i];
    if (p.kind == Param::Kind::Constant) {
      values[i] = p.value;
    } else {
      all_constant = false;
      if (p.index < 0) throw Error(what + ": input/weight index must be >= 0, got " + std::to_string(p.index));
      if (!std::isfinite(p.scale)) throw Error(what + ": parameter scale must be finite");
    }
  }
  if (all_constant) {
    const std::string e = detail::channel_params_error(ch, values);
    if (!e.empty()) throw Error(what + " on wires " + wire_list(wires) + ": " + e);
  } else {
    // Ranges of inputs and weights are checked per call; constants among them here.
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (params[i].kind == Param::Kind::Constant && !std::isfinite(params[i].value)) {
        throw Error(what + ": parameter " + std::to_string(i) + " must be finite");
      }
    }
  }
  for (const Param& p : params) note_param(p);
  Operation op{Gate::Identity, wires, params, {}, ch, {}};
  ops_.push_back(std::move(op));
  return *this;
}

Circuit& Circuit::channel(std::string_view name, const std::vector<int>& wires, const std::vector<Param>& params) {
  return channel(channel_from_name(name), wires, params);
}

Circuit& Circuit::kraus(const std::vector<int>& wires, const std::vector<std::vector<std::complex<double>>>& ops) {
  if (wires.empty() || wires.size() > std::size_t(kMaxChannelWires)) {
    throw Error("Kraus acts on 1 or 2 wires, got " + std::to_string(wires.size()));
  }
  check_wires(wires, "Kraus");
  if (ops.empty()) throw Error("Kraus needs at least one operator");
  const std::size_t d = std::size_t{1} << wires.size();
  if (ops.size() > d * d * 4) {
    throw Error("Kraus: " + std::to_string(ops.size()) + " operators on " + std::to_string(wires.size()) +
                " wire(s); at most " + std::to_string(d * d * 4) + " are accepted (" + std::to_string(d * d) +
                " suffice for any channel)");
  }
  for (std::size_t k = 0; k < ops.size(); ++k) {
    if (ops[k].size() != d * d) {
      throw Error("Kraus operator " + std::to_string(k) + " on " + std::to_string(wires.size()) + " wire(s) needs " +
                  std::to_string(d * d) + " entries (" + std::to_string(d) + "x" + std::to_string(d) + "), got " +
                  std::to_string(ops[k].size()));
    }
    for (const auto& z : ops[k]) {
      if (!std::isfinite(z.real()) || !std::isfinite(z.imag())) {
        throw Error("Kraus operator " + std::to_string(k) + " has a non-finite entry");
      }
    }
  }
  double worst = 0;  // max |(sum_k K^dag K - I)_{rc}|: trace preservation
  for (std::size_t r = 0; r < d; ++r) {
    for (std::size_t c = 0; c < d; ++c) {
      std::complex<double> s = 0;
      for (const auto& K : ops) {
        for (std::size_t i = 0; i < d; ++i) s += std::conj(K[i * d + r]) * K[i * d + c];
      }
      worst = std::max(worst, std::abs(s - (r == c ? 1.0 : 0.0)));
    }
  }
  if (worst > kKrausTolerance) {
    char b[64];
    std::snprintf(b, sizeof b, "%.3g", worst);
    throw Error(std::string("Kraus operators are not trace preserving: max |sum K^dag K - I| = ") + b +
                " (tolerance 1e-10)");
  }
  Operation op{Gate::Identity, wires, {}, {}, Channel::Kraus, ops};
  ops_.push_back(std::move(op));
  return *this;
}

Circuit& Circuit::readout_matrix(int wire, const std::array<double, 4>& a) {
  check_wires({wire}, "readout error");
  for (double v : a) {
    if (!(v >= 0 && v <= 1)) {
      throw Error("readout error of wire " + std::to_string(wire) +
                  ": entries must be probabilities in [0, 1] (A[i][j] = P(read i | true j)), got " + std::to_string(v));
    }
  }
  for (int j = 0; j < 2; ++j) {
    const double col = a[j] + a[2 + j];
    if (std::abs(col - 1) > 1e-9) {
      throw Error("readout error of wire " + std::to_string(wire) + ": column " + std::to_string(j) + " sums to " +
                  std::to_string(col) + ", not 1 (A[i][j] = P(read i | true j) must be column-stochastic)");
    }
  }
  if (readout_.empty()) readout_.assign(std::size_t(n_qubits_), {1, 0, 0, 1});
  readout_[std::size_t(wire)] = a;
  return *this;
}

Circuit& Circuit::readout_error(int wire, double p1_given_0, double p0_given_1) {
  return readout_matrix(wire, {1 - p1_given_0, p0_given_1, p1_given_0, 1 - p0_given_1});
}

Circuit& Circuit::purity() {
  measurements_.push_back(Measurement{Measurement::Kind::Purity, {}, {}});
  return *this;
}

bool Circuit::is_noisy() const {
  if (!readout_.empty()) return true;
  for (const auto& op : ops_) {
    if (op.is_channel()) return true;
  }
  for (const auto& m : measurements_) {
    if (m.kind == Measurement::Kind::Purity) return true;
  }
  return false;
}

}  // namespace qfleet
