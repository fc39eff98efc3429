// The cpu device's instruction sets: which this build has, which this machine runs,
// QFLEET_ISA's cap and the choice by name. Compiled with baseline flags only.
#include "cpu/cpu_isa.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>

#include "qfleet/error.hpp"
#include "qfleet/names.hpp"

namespace qfleet::cpu {

#if defined(QFLEET_HAVE_AVX512)
extern const CpuIsa kIsa_avx512;
#endif
#if defined(QFLEET_HAVE_AVX2)
extern const CpuIsa kIsa_avx2;
#endif
extern const CpuIsa kIsa_baseline;

namespace {

bool cpu_has(const char* isa) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (std::string(isa) == "avx512") {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("fma");
  }
  if (std::string(isa) == "avx2") return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  return std::string(isa) == "baseline";
}

}  // namespace

// QFLEET_ISA, when it names one of this machine's instruction sets, caps the table
// there: the process behaves as on a machine whose best is that one ("automatic" picks
// it, wider ones are not offered), so a test run or a user can check the avx2 and
// baseline paths on an AVX-512 machine. (oneDNN's ONEDNN_MAX_CPU_ISA is the same
// idea.) A value this machine lacks leaves the table whole; select_isa refuses it.
namespace {
const char* isa_cap() {
  const char* env = std::getenv("QFLEET_ISA");
  return env != nullptr && *env != 0 ? env : nullptr;
}
}  // namespace

const std::vector<const CpuIsa*>& isa_table() {
  static const std::vector<const CpuIsa*> table = [] {
    std::vector<const CpuIsa*> t;
#if defined(QFLEET_HAVE_AVX512)
    if (cpu_has("avx512")) t.push_back(&kIsa_avx512);
#endif
#if defined(QFLEET_HAVE_AVX2)
    if (cpu_has("avx2")) t.push_back(&kIsa_avx2);
#endif
    t.push_back(&kIsa_baseline);
    if (const char* cap = isa_cap()) {
      const auto it = std::find_if(t.begin(), t.end(), [cap](const CpuIsa* k) { return k->name == std::string(cap); });
      if (it != t.end()) t.erase(t.begin(), it);
    }
    return t;
  }();
  return table;
}

int select_isa(const std::string& name) {
  const auto& t = isa_table();
  if (const std::string_view now = respelled(name); !now.empty()) {
    throw Error("instruction set '" + name + "' is spelled '" + std::string(now) + "'");
  }
  const bool from_env = name == "automatic" && isa_cap() != nullptr;
  const std::string want = from_env ? isa_cap() : name;
  if (want == "automatic") return 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (want == t[i]->name) return static_cast<int>(i);
  }
  std::string have;
  for (const CpuIsa* k : t) have += std::string(have.empty() ? "" : ", ") + k->name;
  std::string why = "instruction set '" + want + "'" + (from_env ? " (the environment variable QFLEET_ISA)" : "") +
                    " is not available on this machine/build (available: " + have + ")";
  if (!from_env && isa_cap() != nullptr && want != isa_cap()) {
    why += "; QFLEET_ISA=" + std::string(isa_cap()) + " limits this process to it and narrower ones";
  }
  throw Error(why);
}

}  // namespace qfleet::cpu
