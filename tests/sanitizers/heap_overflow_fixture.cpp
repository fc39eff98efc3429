// A heap-buffer overflow on purpose, in a shared library of the AddressSanitizer tree.
// scripts/test.sh loads it into the Python interpreter the way the Python suite's
// instrumented libraries are loaded there (the ASan runtime preloaded) and expects the
// report: a run where the sanitizer is not in effect for libraries loaded from Python (the
// runtime not preloaded, an option that hides reports) fails instead of passing unchecked.
#include <cstdlib>

extern "C" int qfleet_heap_overflow_fixture(int n) {
  auto* a = static_cast<volatile int*>(std::malloc(sizeof(int) * static_cast<unsigned>(n)));
  const int past_the_end = a[n];  // reads one int past the allocation
  std::free(const_cast<int*>(a));
  return past_the_end;
}
