#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

#include "qfleet/error.hpp"
#include "qfleet/observable.hpp"

namespace qfleet {

PauliWord PauliWord::parse(std::string_view text) {
  PauliWord w;
  std::size_t i = 0;
  auto fail = [&](const std::string& why) {
    throw Error("bad Pauli word '" + std::string(text) + "': " + why);
  };
  while (i < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    const char letter = static_cast<char>(std::toupper(static_cast<unsigned char>(text[i])));
    if (letter != 'X' && letter != 'Y' && letter != 'Z' && letter != 'I') {
      fail(std::string("unknown Pauli letter '") + text[i] + "' (use X, Y, Z or I)");
    }
    ++i;
    std::size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (start == i) {
      if (letter == 'I') continue;  // a bare "I" is the identity
      fail(std::string("letter '") + letter + "' needs a wire number, e.g. " + letter + "0");
    }
    if (i - start > 6) fail("wire number too large");
    const int wire = std::stoi(std::string(text.substr(start, i - start)));
    if (letter == 'I') continue;
    for (const auto& f : w.factors) {
      if (f.second == wire) fail("wire " + std::to_string(wire) + " appears twice");
    }
    w.factors.emplace_back(letter, wire);
  }
  return w;
}

std::string PauliWord::str() const {
  if (factors.empty()) return "I";
  std::string s;
  for (const auto& [l, w] : factors) {
    if (!s.empty()) s += ' ';
    s += l;
    s += std::to_string(w);
  }
  return s;
}

int PauliWord::max_wire() const {
  int m = -1;
  for (const auto& f : factors) m = std::max(m, f.second);
  return m;
}

Observable Observable::word(std::string_view text) {
  Observable o;
  o.terms.emplace_back(1.0, PauliWord::parse(text));
  return o;
}

Observable Observable::sum(const std::vector<std::pair<double, std::string>>& terms) {
  Observable o;
  for (const auto& [c, t] : terms) {
    if (!std::isfinite(c)) throw Error("observable coefficient must be finite, got " + std::to_string(c));
    o.terms.emplace_back(c, PauliWord::parse(t));
  }
  if (o.terms.empty()) throw Error("an observable needs at least one term");
  return o;
}

std::string Observable::str() const {
  std::ostringstream os;
  for (std::size_t k = 0; k < terms.size(); ++k) {
    if (k) os << " + ";
    os << terms[k].first << " * " << terms[k].second.str();
  }
  return os.str();
}

}  // namespace qfleet
