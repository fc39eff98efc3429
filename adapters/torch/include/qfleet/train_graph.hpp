// qfleet::train graph mode: a whole training step (forward, loss, backward, optimizer,
// qfleet engine calls included) captured once into a CUDA graph and replayed, so a
// step costs one launch instead of hundreds. In libqfleet_train_cuda, which
// links LibTorch's CUDA half; libqfleet_torch stays loadable without a CUDA runtime.
//
// The contract, as for torch.cuda.graphs: the step reads its inputs from static
// tensors that the caller fills (copy_) before each call, allocates nothing whose
// address it keeps between calls, and neither synchronises with the host nor changes
// shapes. Use DeviceOptimizer (qfleet/train.hpp) for the update: its state lives on
// the device. Random numbers from the default CUDA generator stay correct across
// replays (capture registers it), and from other CUDA generators named in
// GraphOptions::generators (each replay draws the numbers an eager step would draw
// next from it; seeding it between replays restarts it as for an eager step). When
// capture fails (a host sync such as .item(), an op that cannot be captured, a dynamic
// shape) the step runs eagerly from then on and fallback_reason() says why: never a crash.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "qfleet/train.hpp"

namespace qfleet::train {

struct GraphOptions {
  int64_t warmup = 3;  // eager steps (on a side stream) before capture: lazy initialisation happens there
  bool log = true;     // print a fallback's reason to stderr once
  // CUDA generators (besides the default one) the step draws from. Each is given a
  // graph-safe state once (graphsafe_set_state: its seed and offset kept), which
  // every graph that names it registers before capture.
  std::vector<at::Generator> generators = {};
};

class GraphStep {
 public:
  GraphStep(std::function<Metrics()> step, const torch::Device& device, GraphOptions options = {});
  ~GraphStep();
  GraphStep(const GraphStep&) = delete;
  GraphStep& operator=(const GraphStep&) = delete;

  // One step: eager during warm-up and after a fallback, else a replay. The metrics
  // returned after capture are the graph's static outputs (read them before the next call).
  Metrics operator()();
  bool captured() const;
  int64_t replays() const { return replays_; }
  const std::string& fallback_reason() const { return reason_; }

 private:
  void fall_back(const std::string& why);
  Metrics warm_step();
  bool capture();
  std::function<Metrics()> step_;
  torch::Device device_;
  GraphOptions opt_;
  int64_t calls_ = 0, replays_ = 0;
  std::string reason_;
  struct Graph;
  std::unique_ptr<Graph> graph_;
  Metrics outputs_;
};

}  // namespace qfleet::train
