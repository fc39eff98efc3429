// LibTorch's CUDA half, loaded on demand by the programs that link only its CPU half.
//
// libtorch_cuda.so registers LibTorch's CUDA kernels, allocator and hooks when it is
// loaded. Python's `import torch` loads it; a C++ program linked against qfleet_torch
// (which names only libtorch_cpu and c10, so that it loads where no CUDA runtime is
// installed) has it dropped by the linker's --as-needed, and then every CUDA tensor fails:
// qfleet-meta with device = cuda on an H200 (2026-11-29) stopped with "Could not run
// 'aten::empty_strided' with arguments from the 'CUDA' backend", and qfleet-qgan said
// "torch sees no CUDA device" beside a visible GPU. So the apps' device settings load it
// from beside libtorch_cpu (the same LibTorch, whatever its folder) before asking torch
// about CUDA, where the engine sees a CUDA device: elsewhere it would cost a process
// about a second and give nothing.
#include <ATen/Context.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <dlfcn.h>

#include <filesystem>
#include <mutex>

#include "qfleet/program.hpp"
#include "qfleet/train.hpp"

namespace qfleet::train {

namespace {

bool cuda_registered() { return c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA); }

// The folder of the loaded libtorch_cpu: the shared object that holds at::globalContext.
std::string torch_lib_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&at::globalContext), &info) == 0 || info.dli_fname == nullptr) return "";
  return std::filesystem::path(info.dli_fname).parent_path().string();
}

struct Loaded {
  bool ok = false;
  std::string why;
};

Loaded load_once() {
  if (cuda_registered()) return {true, "LibTorch's CUDA half was already loaded"};
  const std::string dir = torch_lib_dir();
  if (dir.empty()) return {false, "the folder of libtorch_cpu is unknown (dladdr failed)"};
  const std::string path = dir + "/libtorch_cuda.so";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return {false, "this LibTorch has no CUDA half (no libtorch_cuda.so in " + dir + "): a CPU-only build"};
  // RTLD_GLOBAL: torch_cuda's symbols serve what loads later (c10_cuda, the CUDA graph library).
  if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    const char* err = dlerror();
    return {false, "loading " + path + " failed: " + (err != nullptr ? err : "unknown error")};
  }
  if (!cuda_registered()) return {false, "loaded " + path + ", but it registered no CUDA device guard"};
  return {true, "loaded " + path};
}

}  // namespace

bool load_torch_cuda(std::string* why) {
  static std::once_flag once;
  static Loaded loaded;
  std::call_once(once, [] { loaded = load_once(); });
  if (why != nullptr) *why = loaded.why;
  return loaded.ok;
}

bool load_torch_cuda_for_a_gpu(std::string* why) {
  if (qfleet::cuda_device_count() == 0) {
    if (why != nullptr) *why = "qfleet sees no CUDA device";
    return false;
  }
  return load_torch_cuda(why);
}

}  // namespace qfleet::train
