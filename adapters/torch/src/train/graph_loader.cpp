// captured_step (qfleet/train.hpp): graph mode for code that links only libqfleet_torch.
//
// GraphStep lives in libqfleet_train_cuda.so because it links LibTorch's CUDA half, which
// libqfleet_torch must not (it loads where no CUDA runtime is installed). The apps link
// libqfleet_torch, so here the CUDA library is opened at run time from beside this one,
// once, and asked for a step through one C entry point (graph_step.cpp's
// qfleet_train_new_graph_step); LibTorch's CUDA half is loaded first (torch_cuda.cpp).
#include <dlfcn.h>

#include <filesystem>
#include <mutex>

#include "qfleet/train.hpp"

namespace qfleet::train {

namespace {

class EagerStep final : public CapturedStep {
 public:
  EagerStep(std::function<Metrics()> step, std::string why) : step_(std::move(step)), why_(std::move(why)) {}
  Metrics operator()() override { return step_(); }
  bool captured() const override { return false; }
  std::string status() const override { return "eager: " + why_; }

 private:
  std::function<Metrics()> step_;
  std::string why_;
};

using Factory = CapturedStep* (*)(std::function<Metrics()>*, const torch::Device*, int64_t,
                                  const std::vector<at::Generator>*);

struct GraphLibrary {
  Factory make = nullptr;
  std::string why;
};

GraphLibrary open_graph_library() {
  std::string why;
  if (!load_torch_cuda(&why)) return {nullptr, why};
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&captured_step), &info) == 0 || info.dli_fname == nullptr)
    return {nullptr, "the folder of libqfleet_torch is unknown (dladdr failed)"};
  const std::string path = (std::filesystem::path(info.dli_fname).parent_path() / "libqfleet_train_cuda.so").string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return {nullptr, "no " + path + " (graph mode is built where LibTorch has its CUDA half)"};
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    return {nullptr, "loading " + path + " failed: " + (err != nullptr ? err : "unknown error")};
  }
  auto* make = reinterpret_cast<Factory>(dlsym(lib, "qfleet_train_new_graph_step"));
  if (make == nullptr) return {nullptr, path + " has no qfleet_train_new_graph_step"};
  return {make, ""};
}

}  // namespace

std::unique_ptr<CapturedStep> captured_step(std::function<Metrics()> step, const torch::Device& device, int64_t warmup,
                                            std::vector<at::Generator> generators) {
  if (!step) throw std::invalid_argument("captured_step: no step given");
  if (!device.is_cuda()) return std::make_unique<EagerStep>(std::move(step), "graph mode needs a CUDA device, not " + device.str());
  static std::once_flag once;
  static GraphLibrary loaded;
  std::call_once(once, [] { loaded = open_graph_library(); });
  if (loaded.make == nullptr) return std::make_unique<EagerStep>(std::move(step), loaded.why);
  return std::unique_ptr<CapturedStep>(loaded.make(&step, &device, warmup, &generators));
}

}  // namespace qfleet::train
