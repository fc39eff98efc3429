// The executors' pool (task_pool.hpp). One job at a time, in one Job record reused by every
// call, so a warm call allocates nothing (tests/alloc). A worker joins a job in three steps
// (enter, check it is the job it saw announced and still open, take items), and a caller
// rewrites the record only when no worker is inside it: a worker late for one job can
// never take an item of the next.
#include "cpu/task_pool.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define QFLEET_PAUSE() _mm_pause()
#else
#define QFLEET_PAUSE() ((void)0)
#endif

namespace qfleet::cpu {
namespace {

using Body = ItemBody;
using Clock = std::chrono::steady_clock;

// A waiting worker spins (pause) up to kSpinIdle before it sleeps when the machine is idle:
// waking a sleeping thread on an idle virtual CPU costs more than a short call (same-run A/B:
// a 200 us spin then sleep made 32 open-system tasks 9-16% slower than OpenMP's spinning
// team). sched_yield was no middle way: on a virtual machine it hands the virtual CPU back to
// the host (7-14% slower idle). While the machine is busy (machine_busy()), workers spin only
// kSpin before sleeping, leaving the cores to the processes beside them, a caller waiting for
// a worker's item yields, and the circuit executors give each thread a larger share.
constexpr auto kSpin = std::chrono::microseconds(20);
constexpr auto kSpinIdle = std::chrono::milliseconds(4);

// Busy: at least two more threads runnable than the machine has CPUs, read from
// /proc/loadavg's runnable count (this process's running threads included) at most every
// kLookEvery; one more is a passing kernel thread or the reader itself (with "more than the
// CPUs", an idle A/B of 32 open-system tasks ran 10-19% slower).
// Not "a waiting thread found itself descheduled": a virtual machine's host takes its CPUs
// away now and then, and with that test an idle A/B ran B = 4,096 circuits 1.96x slower.
constexpr auto kLookEvery = std::chrono::milliseconds(20);

std::atomic<Clock::rep> g_looked_at{0};  // (steady_clock counts from boot)
std::atomic<bool> g_busy{false};

int runnable_threads() {
  const int fd = ::open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char text[128];
  const ssize_t n = ::read(fd, text, sizeof(text) - 1);
  ::close(fd);
  if (n <= 0) return -1;
  text[n] = '\0';
  const char* slash = std::strchr(text, '/');  // "0.52 0.58 0.59 3/412 1234": 3 runnable
  if (slash == nullptr) return -1;
  const char* p = slash;
  while (p > text && p[-1] >= '0' && p[-1] <= '9') --p;
  return std::atoi(p);
}

bool busy_at(Clock::time_point now) {
  const Clock::rep t = now.time_since_epoch().count();
  Clock::rep last = g_looked_at.load(std::memory_order_relaxed);
  if (t - last >= Clock::duration(kLookEvery).count() &&
      g_looked_at.compare_exchange_strong(last, t, std::memory_order_relaxed)) {  // (one thread looks)
    static const long cpus = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
    g_busy.store(runnable_threads() > cpus + 1, std::memory_order_relaxed);  // (+1: a passing kernel thread)
  }
  return g_busy.load(std::memory_order_relaxed);
}

thread_local bool t_inside_body = false;

// (The counters every item touches sit on cache lines of their own: two threads taking
// items would otherwise pass one line back and forth.)
struct Job {
  std::atomic<std::uint64_t> gen{0};  // which announcement this record holds
  std::atomic<bool> closed{true};     // every item taken and done (or no job yet)
  std::atomic<int> inside{0};         // workers between entering and leaving
  alignas(64) std::atomic<std::size_t> next{0};  // the next item to hand out
  alignas(64) std::atomic<std::size_t> done{0};  // items finished (added once per thread and job)
  const Body* body = nullptr;
  std::size_t n = 0;
  int team = 0;
  std::mutex error_mutex;
  std::exception_ptr error;
};

// Waits until `ready()`: spins, then (when `sleep` is given) sleeps in it; see kSpinIdle.
template <class Ready, class Sleep>
void wait_until(const Ready& ready, const Sleep& sleep) {
  const auto start = Clock::now();
  for (unsigned i = 0;; ++i) {
    if (ready()) return;
    if ((i & 63) != 63) {
      QFLEET_PAUSE();
      continue;
    }
    const auto now = Clock::now();
    const bool busy = busy_at(now);
    if (now - start < (busy ? kSpin : kSpinIdle)) continue;
    if (sleep(ready)) return;
    if (busy) sched_yield();  // (a caller: the worker it waits for may need this core)
  }
}

class Pool {
 public:
  bool try_acquire() { return !busy_.exchange(true, std::memory_order_acquire); }
  void release() { busy_.store(false, std::memory_order_release); }

  void run(std::size_t n, int team, const Body& body) {
    ensure_workers(team - 1);
    // Rewrite the record only when no late worker is inside it (it then sees `closed`,
    // or the new `gen`, and leaves without touching the fields).
    wait_until([&] { return job_.inside.load() == 0; }, [](auto&) { return false; });
    const std::uint64_t g = announced_.load(std::memory_order_relaxed) + 1;
    job_.gen.store(g);
    job_.body = &body;
    job_.n = n;
    job_.team = team;
    job_.error = nullptr;
    job_.next.store(0, std::memory_order_relaxed);
    job_.done.store(0, std::memory_order_relaxed);
    job_.closed.store(false);
    {
      std::lock_guard lock(mutex_);
      announced_.store(g, std::memory_order_release);
    }
    if (sleeping_.load() > 0) wake_.notify_all();
    take_items(0);
    wait_until([&] { return job_.done.load(std::memory_order_acquire) == n; }, [](auto&) { return false; });
    job_.closed.store(true);
    if (job_.error) std::rethrow_exception(job_.error);
  }

 private:
  std::size_t take_items(int slot) {
    const Body& body = *job_.body;
    const std::size_t n = job_.n;
    t_inside_body = true;
    std::size_t ran = 0;
    for (std::size_t i; (i = job_.next.fetch_add(1, std::memory_order_relaxed)) < n; ++ran) {
      try {
        body(i, slot);
      } catch (...) {
        std::lock_guard lock(job_.error_mutex);
        if (!job_.error) job_.error = std::current_exception();
      }
    }
    t_inside_body = false;
    if (ran) job_.done.fetch_add(ran, std::memory_order_release);
    return ran;
  }

  void worker(int slot) {
    std::uint64_t seen = 0;
    for (;;) {
      wait_until([&] { return announced_.load(std::memory_order_acquire) != seen; },
                 [&](auto& ready) {
                   std::unique_lock lock(mutex_);
                   sleeping_.fetch_add(1);
                   wake_.wait(lock, ready);
                   sleeping_.fetch_sub(1);
                   return true;
                 });
      seen = announced_.load(std::memory_order_acquire);
      job_.inside.fetch_add(1);
      if (!job_.closed.load() && job_.gen.load() == seen && slot < job_.team) take_items(slot);
      job_.inside.fetch_sub(1);
    }
  }

  void ensure_workers(int count) {
    std::lock_guard lock(mutex_);
    while (static_cast<int>(workers_) < count) {
      const int slot = static_cast<int>(++workers_);
      std::thread([this, slot] { worker(slot); }).detach();  // (lives as long as the process)
    }
  }

  std::atomic<bool> busy_{false};
  std::atomic<std::uint64_t> announced_{0};
  std::atomic<int> sleeping_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
  std::size_t workers_ = 0;
  Job job_;
};

std::atomic<Pool*> g_pool{nullptr};
std::once_flag g_atfork_once;

// A forked child has none of the parent's workers: it starts a pool of its own (the old
// record, which may be mid-call in the parent's other threads, is left untouched).
void after_fork_in_child() { g_pool.store(nullptr); }

Pool& pool() {
  std::call_once(g_atfork_once, [] { pthread_atfork(nullptr, nullptr, after_fork_in_child); });
  Pool* p = g_pool.load(std::memory_order_acquire);
  if (p == nullptr) {
    static std::mutex create;
    std::lock_guard lock(create);
    p = g_pool.load(std::memory_order_acquire);
    if (p == nullptr) {
      p = new Pool();  // never freed: workers wait in it until the process ends
      g_pool.store(p, std::memory_order_release);
    }
  }
  return *p;
}

void run_serially(std::size_t n_items, const Body& body) {
  for (std::size_t i = 0; i < n_items; ++i) body(i, 0);
}

// The same, for a call the pool would have run but another caller holds: its bodies are a
// pool call's, and a call from inside one runs alone too. Without the mark such a body took
// the pool for its nested call once the other caller was done, and the nested items ran on
// workers (the threads test saw it in 1 run of 300 beside a busy process per core).
void run_serially_as_a_body(std::size_t n_items, const Body& body) {
  struct Mark {
    bool before = t_inside_body;
    Mark() { t_inside_body = true; }
    ~Mark() { t_inside_body = before; }
  } mark;
  run_serially(n_items, body);
}

}  // namespace

bool machine_busy() { return busy_at(Clock::now()); }

void run_items(std::size_t n_items, int threads, const Body& body) {
  if (threads <= 1 || n_items <= 1 || t_inside_body) return run_serially(n_items, body);
  Pool& p = pool();
  if (!p.try_acquire()) return run_serially_as_a_body(n_items, body);  // another caller has the pool
  try {
    p.run(n_items, threads, body);
  } catch (...) {
    p.release();
    throw;
  }
  p.release();
}

}  // namespace qfleet::cpu
