// A data race on purpose: two threads increment one plain int. scripts/test.sh runs it in
// the ThreadSanitizer tree and expects the report, so a tree where the sanitizer is not in
// effect (a flag lost, a runtime option that hides reports) fails the run instead of
// passing the threads tests unchecked.
#include <cstdio>
#include <thread>

int counter = 0;

int main() {
  std::thread a([] {
    for (int i = 0; i < 100000; ++i) ++counter;
  });
  std::thread b([] {
    for (int i = 0; i < 100000; ++i) ++counter;
  });
  a.join();
  b.join();
  std::printf("%d\n", counter);
  return 0;
}
