// device = automatic and batch = auto (qfleet/train.hpp).
//
// Why measured and not estimated: the PPO code qfleet replaces found that the GPU loses
// to the CPU for small steps and wins for large ones, and that the crossover moves with
// the model; and a step's memory is the network's activations plus the engine's
// buffers, which only a run of the step shows. So both choices run the step.
#include <ATen/Context.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/CachingDeviceAllocator.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "qfleet/names.hpp"
#include "qfleet/train.hpp"

namespace qfleet::train {

namespace {

std::string mib(double bytes) {
  std::ostringstream o;
  o.precision(4);
  o << bytes / (1024.0 * 1024.0) << " MiB";
  return o.str();
}

// A number from a file such as /sys/fs/cgroup/memory.max ("max" or missing: none).
std::optional<std::size_t> read_number(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  if (!(f >> s) || s == "max") return std::nullopt;
  try {
    return static_cast<std::size_t>(std::stoull(s));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::size_t cpu_free_memory() {
  std::ifstream f("/proc/meminfo");
  std::string key, unit;
  std::size_t value = 0, available = 0;
  while (f >> key >> value >> unit)
    if (key == "MemAvailable:") available = value * 1024;
  if (available == 0) throw std::runtime_error("free memory: /proc/meminfo has no MemAvailable line");
  // A container's limit (cgroup v2) can be below what the machine has free.
  const auto limit = read_number("/sys/fs/cgroup/memory.max"), used = read_number("/sys/fs/cgroup/memory.current");
  if (limit && used) available = std::min(available, *limit > *used ? *limit - *used : std::size_t(0));
  return available;
}

c10::DeviceAllocator* cuda_allocator(const torch::Device& device) {
  if (!at::hasCUDA()) throw std::runtime_error("device " + device.str() + ": this process has no CUDA (libtorch_cuda not loaded)");
  return c10::getDeviceAllocator(torch::kCUDA);
}

c10::DeviceIndex index_of(const torch::Device& d) { return d.has_index() ? d.index() : 0; }

// The CPU allocator, wrapped to count the bytes it holds and their peak. Its pointers
// are their own contexts (the inner allocation is kept in a table by its address), as the
// default CPU allocator's are: LibTorch's raw_allocate, which some CPU kernels call,
// asserts that (c10/core/Allocator.h), and a tensor made during a probe may be freed long
// after it.
class CountingCpuAllocator final : public c10::Allocator {
 public:
  c10::Allocator* inner = nullptr;
  std::atomic<std::int64_t> live{0}, peak{0};

  static CountingCpuAllocator& instance() {
    static CountingCpuAllocator* a = new CountingCpuAllocator;  // never destroyed: tensors may outlive main
    return *a;
  }
  c10::DataPtr allocate(std::size_t n) override {
    c10::DataPtr d = inner->allocate(n);
    void* data = d.get();
    if (data == nullptr) return d;  // (zero bytes)
    const c10::Device dev = d.device();
    {
      std::lock_guard<std::mutex> lock(table_mutex_);
      table_.emplace(data, Held{std::move(d), n});
    }
    const std::int64_t now = live.fetch_add(static_cast<std::int64_t>(n)) + static_cast<std::int64_t>(n);
    std::int64_t p = peak.load();
    while (now > p && !peak.compare_exchange_weak(p, now)) {
    }
    return {data, data, &release, dev};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

 private:
  struct Held {
    c10::DataPtr inner;
    std::size_t bytes;
  };
  static void release(void* data) {
    CountingCpuAllocator& a = instance();
    c10::DataPtr freed;  // freed after the lock is released
    {
      std::lock_guard<std::mutex> lock(a.table_mutex_);
      const auto it = a.table_.find(data);
      if (it == a.table_.end()) return;
      a.live.fetch_sub(static_cast<std::int64_t>(it->second.bytes));
      freed = std::move(it->second.inner);
      a.table_.erase(it);
    }
  }
  std::mutex table_mutex_;
  std::unordered_map<void*, Held> table_;
};

constexpr std::uint8_t kProbePriority = 200;  // above the default CPU allocator's

}  // namespace

std::size_t free_memory(const torch::Device& device) {
  if (device.is_cpu()) return cpu_free_memory();
  if (!device.is_cuda()) throw std::invalid_argument("free memory: unknown device type " + device.str());
  c10::DeviceAllocator* a = cuda_allocator(device);
  const auto [free_bytes, total] = a->getMemoryInfo(index_of(device));
  (void)total;
  // Memory the caching allocator holds but no tensor uses is free for this process too.
  const auto stats = a->getDeviceStats(index_of(device));
  const auto agg = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  const std::int64_t cached = stats.reserved_bytes[agg].current - stats.allocated_bytes[agg].current;
  return free_bytes + static_cast<std::size_t>(std::max<std::int64_t>(cached, 0));
}

std::size_t peak_memory(const torch::Device& device, const std::function<void()>& fn) {
  if (device.is_cpu()) {
    CountingCpuAllocator& counting = CountingCpuAllocator::instance();
    static std::mutex one_probe;
    std::lock_guard<std::mutex> lock(one_probe);
    c10::Allocator* previous = c10::GetCPUAllocator();
    counting.inner = previous;
    counting.live = 0;
    counting.peak = 0;
    c10::SetCPUAllocator(&counting, kProbePriority);
    try {
      fn();
    } catch (...) {
      c10::SetCPUAllocator(previous, kProbePriority);
      throw;
    }
    c10::SetCPUAllocator(previous, kProbePriority);
    return static_cast<std::size_t>(std::max<std::int64_t>(counting.peak.load(), 0));
  }
  if (!device.is_cuda()) throw std::invalid_argument("peak memory: unknown device type " + device.str());
  c10::DeviceAllocator* a = cuda_allocator(device);
  const auto agg = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  const std::int64_t before = a->getDeviceStats(index_of(device)).allocated_bytes[agg].current;
  a->resetPeakStats(index_of(device));
  fn();
  const std::int64_t peak = a->getDeviceStats(index_of(device)).allocated_bytes[agg].peak;
  return static_cast<std::size_t>(std::max<std::int64_t>(peak - before, 0));
}

BatchChoice choose_batch(const std::function<std::size_t(int64_t)>& peak_bytes, std::size_t free_bytes,
                         double fraction, int64_t cap) {
  if (!(fraction > 0 && fraction <= 1))
    throw std::invalid_argument("batch = auto: the memory fraction must be in (0, 1], got " + std::to_string(fraction));
  if (cap < 1) throw std::invalid_argument("batch = auto: the cap must be >= 1, got " + std::to_string(cap));
  const double p1 = static_cast<double>(peak_bytes(1)), p4 = static_cast<double>(peak_bytes(4));
  BatchChoice c;
  const double per = std::max((p4 - p1) / 3.0, 0.0);
  c.per_sample_bytes = static_cast<std::size_t>(std::ceil(per));
  c.fixed_bytes = static_cast<std::size_t>(std::max(p1 - per, 0.0));
  c.budget_bytes = static_cast<std::size_t>(fraction * static_cast<double>(free_bytes));
  const double need1 = double(c.fixed_bytes) + double(c.per_sample_bytes);
  const std::string figures = "fixed " + mib(double(c.fixed_bytes)) + " + " + mib(double(c.per_sample_bytes)) +
                              " per sample; budget " + mib(double(c.budget_bytes)) + " = " +
                              std::to_string(fraction) + " of " + mib(double(free_bytes)) + " free";
  if (need1 > double(c.budget_bytes))
    throw std::runtime_error("batch = auto: even one sample does not fit (" + figures +
                             "); free memory, lower the model's size or use another device");
  double fit = per > 0 ? std::floor((double(c.budget_bytes) - double(c.fixed_bytes)) / per) : double(cap);
  fit = std::min(fit, double(cap));
  c.batch = 1;
  while (double(c.batch) * 2 <= fit) c.batch *= 2;
  c.reason = "batch " + std::to_string(c.batch) + ": the largest power of two within " + figures + " (cap " +
             std::to_string(cap) + ")";
  return c;
}

BatchChoice auto_batch(const std::function<void(int64_t)>& step, const torch::Device& device, double fraction,
                       int64_t cap) {
  const std::size_t free_bytes = free_memory(device);
  return choose_batch([&](int64_t b) { return peak_memory(device, [&] { step(b); }); }, free_bytes, fraction, cap);
}

std::vector<torch::Device> available_devices() {
  std::vector<torch::Device> d{torch::kCPU};
  load_torch_cuda_for_a_gpu();
  if (at::hasCUDA())
    for (int i = 0; i < at::detail::getCUDAHooks().deviceCount(); ++i)
      d.emplace_back(torch::kCUDA, static_cast<c10::DeviceIndex>(i));
  return d;
}

torch::Device device_from_setting(const std::string& setting, std::string* why) {
  const qfleet::Device want = qfleet::value_named(qfleet::kDeviceNames, setting, "device");
  std::string loaded;
  if (want != qfleet::Device::cpu) load_torch_cuda_for_a_gpu(&loaded);
  const bool has_cuda = torch::cuda::is_available();
  if (want == qfleet::Device::cuda && !has_cuda)
    throw std::invalid_argument("device = cuda, but torch sees no CUDA device (" + loaded + ")");
  const bool cuda = want == qfleet::Device::cuda || (want == qfleet::Device::automatic && has_cuda);
  if (why != nullptr) {
    *why = want != qfleet::Device::automatic ? "asked for"
           : cuda                            ? "automatic: a CUDA device is visible"
                                             : "automatic: no CUDA device is visible";
  }
  return cuda ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
}

DeviceChoice choose_device(const std::function<std::function<torch::Tensor()>(const torch::Device&)>& make_step,
                           const std::vector<torch::Device>& candidates, int64_t warmup, int64_t steps) {
  if (candidates.empty()) throw std::invalid_argument("device = automatic: no candidate devices");
  if (warmup < 0 || steps < 1) throw std::invalid_argument("device = automatic: needs warmup >= 0 and steps >= 1");
  if (std::any_of(candidates.begin(), candidates.end(), [](const torch::Device& d) { return d.is_cuda(); }))
    load_torch_cuda_for_a_gpu();
  DeviceChoice c;
  std::string skipped;
  double best = 0;
  for (const auto& d : candidates) {
    try {
      auto step = make_step(d);
      for (int64_t i = 0; i < warmup; ++i) step().cpu();
      std::vector<double> t;
      for (int64_t i = 0; i < steps; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        step().cpu();  // reading the result waits for the device's work
        t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      std::nth_element(t.begin(), t.begin() + std::ptrdiff_t(t.size() / 2), t.end());
      const double median = t[t.size() / 2];
      c.seconds_per_step.emplace_back(d.str(), median);
      if (c.seconds_per_step.size() == 1 || median < best) {
        best = median;
        c.device = d;
      }
    } catch (const std::exception& e) {
      std::string what = e.what();
      skipped += "; " + d.str() + " skipped (" + what.substr(0, what.find('\n')) + ")";
    }
  }
  if (c.seconds_per_step.empty()) throw std::runtime_error("device = automatic: no candidate could run the step" + skipped);
  std::ostringstream o;
  o << "device " << c.device.str() << ":";
  for (const auto& [name, s] : c.seconds_per_step) o << " " << name << " " << s * 1e3 << " ms/step";
  c.reason = o.str() + skipped;
  return c;
}

}  // namespace qfleet::train
