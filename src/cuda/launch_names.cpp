// The launch shapes' names (QFLEET_CUDA_SHAPE, QFLEET_OPEN_CUDA_SHAPE, QFLEET_DM_CUDA_THREADS,
// describe()),
// one table each like the option enums of qfleet/names.hpp. Host C++20, not CUDA:
// the .cu files build as C++17, which names.hpp's tables need not support.
#include <array>
#include <string>

#include "cuda/dm_cuda.hpp"
#include "cuda/open_cuda.hpp"
#include "cuda/sv_cuda.hpp"
#include "qfleet/error.hpp"
#include "qfleet/names.hpp"

namespace qfleet::gpu {
namespace {

constexpr std::array kStrategyNames = {
    EnumName<Strategy>{Strategy::registers, "registers"}, EnumName<Strategy>{Strategy::warp, "warp"},
    EnumName<Strategy>{Strategy::block, "block"},         EnumName<Strategy>{Strategy::interleaved, "interleaved"},
    EnumName<Strategy>{Strategy::global, "global"},       EnumName<Strategy>{Strategy::automatic, "automatic"}};

constexpr std::array kOpenShapeNames = {
    EnumName<OpenShape>{OpenShape::thread, "thread"}, EnumName<OpenShape>{OpenShape::tile8, "tile8"},
    EnumName<OpenShape>{OpenShape::tile16, "tile16"}, EnumName<OpenShape>{OpenShape::warp, "warp"},
    EnumName<OpenShape>{OpenShape::block, "block"},   EnumName<OpenShape>{OpenShape::automatic, "automatic"}};

}  // namespace

// The tables' names are string literals, so .data() is null-terminated.
const char* strategy_name(Strategy s) { return name_in(kStrategyNames, s).data(); }
const char* open_shape_name(OpenShape s) { return name_in(kOpenShapeNames, s).data(); }

Strategy parse_strategy(const char* name) {
  if (const auto s = value_in(kStrategyNames, name)) return *s;
  throw Error(std::string("QFLEET_CUDA_SHAPE='") + name + "': expected " + names_in(kStrategyNames));
}

int parse_dm_threads(const char* name) {
  const std::string s(name);
  if (s == "automatic") return 0;
  for (const int t : {32, 64, 128, 256})
    if (s == std::to_string(t)) return t;
  throw Error("QFLEET_DM_CUDA_THREADS='" + s + "': expected 32, 64, 128, 256 or automatic");
}

OpenShape parse_open_shape(const char* name) {
  if (const auto s = value_in(kOpenShapeNames, name)) return *s;
  throw Error(std::string("QFLEET_OPEN_CUDA_SHAPE='") + name + "': expected " + names_in(kOpenShapeNames));
}

}  // namespace qfleet::gpu
