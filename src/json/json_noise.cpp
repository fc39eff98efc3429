// Reading the circuit problem's noise: channels, readout errors, noise models
// (docs/noisy.md). Every rejection names the JSON path of the value.
#include "json_noise.hpp"

#include <string>
#include <vector>

#include "json_circuit_readers.hpp"
#include "json_common.hpp"

namespace qfleet::json_problem::internal {

void read_channel_op(Circuit& c, const json& v, const std::string& path) {
  const Object o(v, path, {"channel", "wires", "params", "kraus"});
  const std::string name = read_string(o.require("channel"), o.path("channel"));
  const Channel ch = at(o.path("channel"), [&] { return channel_from_name(name); });
  const std::vector<int> wires = read_wires(o.require("wires"), o.path("wires"));
  if (ch == Channel::Kraus) {
    if (o.has("params")) fail(path, "a Kraus channel takes \"kraus\" (its operators), not \"params\"");
    const std::string kp = o.path("kraus");
    const json& list = read_array(o.require("kraus"), kp, "a list of Kraus operators (matrices)");
    std::vector<std::vector<std::complex<double>>> ops;
    for (std::size_t k = 0; k < list.size(); ++k) ops.push_back(read_square_cmatrix(list[k], index_path(kp, k)));
    at(path, [&] { c.kraus(wires, ops); });
    return;
  }
  if (o.has("kraus")) fail(path, "only the Kraus channel takes \"kraus\"");
  std::vector<Param> params;
  if (const json* p = o.get("params")) {
    read_array(*p, o.path("params"), "a list of parameters");
    for (std::size_t i = 0; i < p->size(); ++i) params.push_back(read_param((*p)[i], index_path(o.path("params"), i)));
  }
  at(path, [&] { c.channel(ch, wires, params); });
}

void read_readout_errors(Circuit& c, const json& v, const std::string& path) {
  read_array(v, path, "a list of readout errors ({\"wire\": w, \"p1_given_0\": a, \"p0_given_1\": b})");
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string ip = index_path(path, i);
    const Object o(v[i], ip, {"wire", "p1_given_0", "p0_given_1", "matrix"});
    const int wire = read_int32(o.require("wire"), o.path("wire"));
    if (const json* m = o.get("matrix")) {
      if (o.has("p1_given_0") || o.has("p0_given_1")) fail(ip, "give \"matrix\" or the two probabilities, not both");
      const json& rows = read_array(*m, o.path("matrix"), "a 2 x 2 matrix [[P(0|0), P(0|1)], [P(1|0), P(1|1)]]");
      if (rows.size() != 2) fail(o.path("matrix"), "expected 2 rows, got " + std::to_string(rows.size()));
      std::array<double, 4> a{};
      for (std::size_t r = 0; r < 2; ++r) {
        const std::string rp = index_path(o.path("matrix"), r);
        const json& row = read_array(rows[r], rp, "a row of 2 numbers");
        if (row.size() != 2) fail(rp, "expected 2 numbers, got " + std::to_string(row.size()));
        for (std::size_t k = 0; k < 2; ++k) a[r * 2 + k] = read_number(row[k], index_path(rp, k));
      }
      at(ip, [&] { c.readout_matrix(wire, a); });
    } else {
      const double p10 = read_number(o.require("p1_given_0"), o.path("p1_given_0"));
      const double p01 = read_number(o.require("p0_given_1"), o.path("p0_given_1"));
      at(ip, [&] { c.readout_error(wire, p10, p01); });
    }
  }
}

NoiseModel read_noise_model(const json& v, const std::string& path) {
  const Object o(v, path,
                 {"kind", "name", "qubits", "basis_gates", "coupling_map", "temperature_mk", "qubit_properties",
                  "gates", "gate_error", "thermal_relaxation", "readout_error", "source"});
  if (const json* k = o.get("kind")) {
    const std::string kind = read_string(*k, o.path("kind"));
    if (kind != "noise_model") fail(o.path("kind"), "expected \"noise_model\", got " + quote(kind));
  }
  NoiseModel m;
  if (const json* s = o.get("name")) m.name = read_string(*s, o.path("name"));
  m.n_qubits = read_int32(o.require("qubits"), o.path("qubits"), 1, 1 << 16);
  if (const json* b = o.get("basis_gates")) {
    read_array(*b, o.path("basis_gates"), "a list of gate names");
    for (std::size_t i = 0; i < b->size(); ++i) {
      const std::string gp = index_path(o.path("basis_gates"), i);
      const std::string g = read_string((*b)[i], gp);
      m.basis_gates.push_back(at(gp, [&] { return gate_from_name(g); }));
    }
  }
  if (const json* cm = o.get("coupling_map")) {
    read_array(*cm, o.path("coupling_map"), "a list of [control, target] pairs");
    for (std::size_t i = 0; i < cm->size(); ++i) {
      const std::vector<int> e = read_wires((*cm)[i], index_path(o.path("coupling_map"), i));
      if (e.size() != 2) fail(index_path(o.path("coupling_map"), i), "expected a pair [a, b]");
      m.coupling_map.emplace_back(e[0], e[1]);
    }
  }
  if (const json* t = o.get("temperature_mk")) m.temperature_mk = read_number(*t, o.path("temperature_mk"));
  const std::string qp = o.path("qubit_properties");
  const json& qs = read_array(o.require("qubit_properties"), qp, "one object per qubit");
  if (qs.size() != std::size_t(m.n_qubits)) {
    fail(qp, "has " + std::to_string(qs.size()) + " entries for " + std::to_string(m.n_qubits) + " qubits");
  }
  for (std::size_t q = 0; q < qs.size(); ++q) {
    const Object e(qs[q], index_path(qp, q), {"t1", "t2", "frequency", "p1_given_0", "p0_given_1"});
    NoiseModel::Qubit b;
    if (const json* x = e.get("t1")) b.t1 = read_number(*x, e.path("t1"));
    if (const json* x = e.get("t2")) b.t2 = read_number(*x, e.path("t2"));
    if (const json* x = e.get("frequency")) b.frequency = read_number(*x, e.path("frequency"));
    if (const json* x = e.get("p1_given_0")) b.p1_given_0 = read_number(*x, e.path("p1_given_0"));
    if (const json* x = e.get("p0_given_1")) b.p0_given_1 = read_number(*x, e.path("p0_given_1"));
    m.qubits.push_back(b);
  }
  if (const json* gs = o.get("gates")) {
    read_array(*gs, o.path("gates"), "a list of gate calibrations");
    for (std::size_t i = 0; i < gs->size(); ++i) {
      const std::string gp = index_path(o.path("gates"), i);
      const Object e((*gs)[i], gp, {"gate", "wires", "error", "duration"});
      NoiseModel::GateNoise g;
      const std::string name = read_string(e.require("gate"), e.path("gate"));
      g.gate = at(e.path("gate"), [&] { return gate_from_name(name); });
      g.wires = read_wires(e.require("wires"), e.path("wires"));
      if (const json* x = e.get("error")) g.error = read_number(*x, e.path("error"));
      if (const json* x = e.get("duration")) g.duration = read_number(*x, e.path("duration"));
      m.gates.push_back(g);
    }
  }
  if (const json* x = o.get("gate_error")) m.gate_error = read_bool(*x, o.path("gate_error"));
  if (const json* x = o.get("thermal_relaxation")) m.thermal_relaxation = read_bool(*x, o.path("thermal_relaxation"));
  if (const json* x = o.get("readout_error")) m.readout_error = read_bool(*x, o.path("readout_error"));
  at(path, [&] { m.validate(); });
  return m;
}

}  // namespace qfleet::json_problem::internal
