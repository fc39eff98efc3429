// A downstream C++ project on qfleet::qfleet (the engine, no LibTorch): <Z0> after RY(theta) is cos(theta).
#include <cmath>
#include <cstdio>
#include <qfleet/qfleet.hpp>

int main() {
  qfleet::Circuit c(1);
  c.add("RY", {0}, {qfleet::Param::input(0)}).expval("Z0");
  const auto program = qfleet::compile(c);
  const std::vector<double> x = {0.3, 1.1};
  const auto out = program.forward(qfleet::BatchArgs<double>{2, x, {}});
  for (int b = 0; b < 2; ++b) {
    if (std::abs(out[b] - std::cos(x[b])) > 1e-12) {
      std::printf("mismatch at %d: %g vs %g\n", b, out[b], std::cos(x[b]));
      return 1;
    }
  }
  std::printf("circuit ok (isa %s)\n", program.isa().c_str());
  return 0;
}
