/* A downstream C project on qfleet::c (the C ABI): <Z0> after RY(theta) is cos(theta), and a
 * bad call is a status and a message. Compiled as C, so the header is checked to be C. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <qfleet/qfleet_c.h>

int main(void) {
  const char* json =
      "{\"kind\": \"circuit\", \"qubits\": 1, \"observables\": [[[1.0, \"Z0\"]]],"
      " \"ops\": [{\"gate\": \"RY\", \"wires\": [0], \"params\": [{\"input\": 0}]}]}";
  qfleet_program* p = NULL;
  if (qfleet_compile(json, strlen(json), &p) != QFLEET_OK) {
    printf("compile failed: %s\n", qfleet_last_error());
    return 1;
  }
  const double x[2] = {0.3, 1.1};
  double y[2] = {0, 0};
  if (qfleet_forward(p, 2, x, 2, NULL, 0, y, 2) != QFLEET_OK) {
    printf("forward failed: %s\n", qfleet_last_error());
    return 1;
  }
  for (int b = 0; b < 2; ++b) {
    if (fabs(y[b] - cos(x[b])) > 1e-12) {
      printf("mismatch at %d: %g vs %g\n", b, y[b], cos(x[b]));
      return 1;
    }
  }
  if (qfleet_forward(p, 2, x, 2, NULL, 0, y, 3) != QFLEET_ERROR_ARGUMENT || strlen(qfleet_last_error()) == 0) {
    printf("a wrong output length was not refused\n");
    return 1;
  }
  qfleet_free(p);
  printf("C consumer ok (qfleet %s)\n", qfleet_version());
  return 0;
}
