// GraphStep: warm-up on a side stream, capture, replay; eager with a reason when
// capture fails (qfleet/train_graph.hpp). The sequence is the one PyTorch documents
// for whole-network capture (torch.cuda.graphs, "Whole-network capture").
#include "qfleet/train_graph.hpp"

#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "../train/first_line.hpp"

namespace qfleet::train {

struct GraphStep::Graph {
  at::cuda::CUDAGraph graph;
};

namespace {

// A CUDA graph replays a generator's draws only from a state registered with it before
// capture (CUDAGraph::register_generator_state), and LibTorch hands out no generator's
// state. So each generator a step names gets a state made here, once, with its seed and
// offset, and shares it (graphsafe_set_state, as torch.Generator.graphsafe_set_state);
// every graph naming the generator registers that state. Entries whose generator is
// gone are dropped.
struct SharedGeneratorState {
  c10::weak_intrusive_ptr<c10::GeneratorImpl> generator;
  c10::intrusive_ptr<at::CUDAGeneratorState> state;
};
std::mutex shared_states_mutex;
std::vector<SharedGeneratorState> shared_states;

void check_cuda_generator(const at::Generator& gen) {
  if (!gen.defined() || gen.device().type() != c10::DeviceType::CUDA)
    throw std::invalid_argument("GraphStep: generators must be CUDA generators (got " +
                                (gen.defined() ? gen.device().str() : std::string("an undefined one")) + ")");
}

c10::intrusive_ptr<at::CUDAGeneratorState> graph_safe_state(const at::Generator& gen) {
  check_cuda_generator(gen);
  const std::lock_guard<std::mutex> lock(shared_states_mutex);
  std::erase_if(shared_states, [](const SharedGeneratorState& e) { return e.generator.expired(); });
  for (const auto& e : shared_states)
    if (e.generator.lock().get() == gen.unsafeGetGeneratorImpl()) return e.state;
  at::Generator held = gen;
  auto* impl = at::check_generator<at::CUDAGeneratorImpl>(held);
  const std::lock_guard<std::mutex> gen_lock(held.mutex());
  auto state = c10::make_intrusive<at::CUDAGeneratorState>(impl->current_seed(), impl->philox_offset_per_thread());
  impl->graphsafe_set_state(c10::make_intrusive<at::CUDAGeneratorImpl>(gen.device().index(), state));
  shared_states.push_back({c10::weak_intrusive_ptr<c10::GeneratorImpl>(gen.getIntrusivePtr()), state});
  return state;
}

}  // namespace

GraphStep::GraphStep(std::function<Metrics()> step, const torch::Device& device, GraphOptions options)
    : step_(std::move(step)), device_(device), opt_(options) {
  if (!step_) throw std::invalid_argument("GraphStep: no step given");
  if (opt_.warmup < 1) throw std::invalid_argument("GraphStep: warmup must be >= 1 (lazy initialisation must not be captured)");
  for (const auto& gen : opt_.generators) check_cuda_generator(gen);  // on any device: the caller's list is wrong
  if (!device_.is_cuda()) {
    fall_back("graph mode needs a CUDA device; the step runs eagerly on " + device_.str());
  } else if (!torch::cuda::is_available()) {
    fall_back("no CUDA device is visible; the step runs eagerly");
  } else {
    for (const auto& gen : opt_.generators) graph_safe_state(gen);  // shared before the first draw
  }
}

GraphStep::~GraphStep() = default;

bool GraphStep::captured() const { return graph_ != nullptr; }

void GraphStep::fall_back(const std::string& why) {
  reason_ = why;
  graph_.reset();
  if (opt_.log) std::fprintf(stderr, "qfleet::train graph mode: %s\n", why.c_str());
}

// An eager step on a side stream that waits for the current one and is waited for.
Metrics GraphStep::warm_step() {
  const c10::DeviceIndex dev = device_.has_index() ? device_.index() : c10::cuda::current_device();
  auto current = c10::cuda::getCurrentCUDAStream(dev);
  auto side = c10::cuda::getStreamFromPool(false, dev);
  at::cuda::CUDAEvent ready;
  ready.record(current);
  ready.block(side);
  Metrics m;
  {
    c10::cuda::CUDAStreamGuard guard(side);
    m = step_();
  }
  at::cuda::CUDAEvent done;
  done.record(side);
  done.block(current);
  return m;
}

bool GraphStep::capture() {
  const c10::DeviceIndex dev = device_.has_index() ? device_.index() : c10::cuda::current_device();
  auto current = c10::cuda::getCurrentCUDAStream(dev);
  auto side = c10::cuda::getStreamFromPool(false, dev);
  auto g = std::make_unique<Graph>();
  try {
    at::cuda::CUDAEvent ready;
    ready.record(current);
    ready.block(side);
    {
      c10::cuda::CUDAStreamGuard guard(side);
      for (const auto& gen : opt_.generators) g->graph.register_generator_state(graph_safe_state(gen));
      g->graph.capture_begin();
      try {
        outputs_ = step_();
      } catch (...) {
        try {
          g->graph.capture_end();
        } catch (...) {
        }
        throw;
      }
      g->graph.capture_end();
    }
    at::cuda::CUDAEvent done;
    done.record(side);
    done.block(current);
  } catch (const std::exception& e) {
    (void)cudaGetLastError();  // an invalidated capture leaves an error behind
    fall_back("capture failed, the step runs eagerly from now on: " + first_line(e.what()));
    return false;
  }
  graph_ = std::move(g);
  return true;
}

Metrics GraphStep::operator()() {
  if (!reason_.empty()) return step_();
  if (calls_ < opt_.warmup) {
    ++calls_;
    return warm_step();
  }
  if (!graph_ && !capture()) return step_();  // the captured step did not run: run it now
  graph_->graph.replay();
  ++replays_;
  return outputs_;
}

namespace {

// GraphStep behind the interface libqfleet_torch's captured_step hands out.
class GraphCaptured final : public CapturedStep {
 public:
  GraphCaptured(std::function<Metrics()> step, const torch::Device& device, GraphOptions o)
      : g_(std::move(step), device, o) {}
  Metrics operator()() override { return g_(); }
  bool captured() const override { return g_.captured(); }
  std::string status() const override {
    if (g_.captured()) return "captured (" + std::to_string(g_.replays()) + " replays)";
    return g_.fallback_reason().empty() ? "warming up" : "eager: " + g_.fallback_reason();
  }

 private:
  GraphStep g_;
};

}  // namespace

}  // namespace qfleet::train

// The entry point graph_loader.cpp finds with dlsym (C linkage: an unmangled name).
extern "C" __attribute__((visibility("default"))) qfleet::train::CapturedStep* qfleet_train_new_graph_step(
    std::function<qfleet::train::Metrics()>* step, const torch::Device* device, int64_t warmup,
    const std::vector<at::Generator>* generators) {
  qfleet::train::GraphOptions o;
  o.warmup = warmup;
  o.generators = *generators;
  return new qfleet::train::GraphCaptured(std::move(*step), *device, o);
}
