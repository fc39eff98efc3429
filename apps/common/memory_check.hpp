// A run's memory checked before it allocates: the app runs its step on 1 and 2 items of
// the setting that scales its memory (tasks, images, records), measured by
// qfleet::train::peak_memory, separates the fixed and the per-item parts and refuses a
// setting whose estimate does not fit in what is free, with one line that names the
// setting, the estimate and what is free. Measured and not derived from the model: a
// step's memory is the network's activations, the engine's tensors and the optimizer's
// copies together, which only a run of the step shows (adapters/torch/src/train/resources.cpp).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>

namespace qfleet::app {

struct MemoryEstimate {
  std::size_t fixed_bytes = 0, per_item_bytes = 0, needed_bytes = 0, free_bytes = 0;
};

// `step(n)` runs the app's step on n items; it is called for n = 1 and n = 2 and must not
// change the run (its own random numbers, no update). Throws std::invalid_argument
// ("<setting>: <items> <noun> need about X GiB at once ..., Y GiB are free: lower <setting>")
// when fixed + items * per_item exceeds `fraction` of the device's free memory.
MemoryEstimate check_memory_fits(const torch::Device& device, const std::string& setting, int64_t items,
                                 const std::string& noun, const std::function<void(int64_t)>& step,
                                 double fraction = 0.9);

// The same refusal for a need the app knows in advance (`bytes` on `device`, "<setting>:
// <what> need about X GiB at once on <device>, Y GiB are free: lower <setting>").
std::size_t check_bytes_fit(const torch::Device& device, const std::string& setting, double bytes, const std::string& what,
                            double fraction = 0.9);

}  // namespace qfleet::app
