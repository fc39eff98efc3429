// The hybrid-classifier circuit of the adapter tests: AngleEmbedding (RX) on n
// wires, `layers` StronglyEntanglingLayers, <Z_q> on every wire.
#pragma once

#include <string>
#include <vector>

#include "qfleet/circuit.hpp"

inline qfleet::Circuit classifier(int n, int layers) {
  qfleet::Circuit c(n);
  std::vector<int> wires;
  for (int q = 0; q < n; ++q) wires.push_back(q);
  c.angle_embedding(wires).strongly_entangling_layers(wires, layers);
  for (int q = 0; q < n; ++q) {
    std::string word = "Z";  // (not "Z" + to_string: a GCC 12 -Wrestrict false positive)
    word += std::to_string(q);
    c.expval(word);
  }
  return c;
}
