// Building relocatable plan blobs: arrays appended at 16-byte aligned offsets, the
// offsets kept in pointer fields until view_at-style relocation to a copy of the
// bytes (host memory, or device memory after an upload). Used by sv_pack.cpp and
// open_pack.cpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

namespace qfleet::detail {

template <class T>
const T* as_offset(std::size_t off) {
  return reinterpret_cast<const T*>(off);  // NOLINT: an offset until relocate() turns it into an address
}

template <class T>
const T* relocate(const T* off, const std::byte* base) {
  return reinterpret_cast<const T*>(base + reinterpret_cast<std::size_t>(off));
}

// Offset 0 is never handed out (the first 16 bytes are padding), so a null pointer
// field stays recognisable as "absent" before and after relocation.
class Blob {
 public:
  Blob() : bytes_(16) {}
  template <class T>
  const T* add(const T* data, std::size_t count) {
    const std::size_t off = (bytes_.size() + 15) / 16 * 16;
    bytes_.resize(off + std::max<std::size_t>(count, 1) * sizeof(T));
    if (count > 0) std::memcpy(bytes_.data() + off, data, count * sizeof(T));
    return as_offset<T>(off);
  }
  template <class T>
  const T* add(const std::vector<T>& v) {
    return add(v.data(), v.size());
  }
  std::vector<std::byte> take() { return std::move(bytes_); }

 private:
  std::vector<std::byte> bytes_;
};

// The arrays every packed circuit view has (kern::SvPlan, kern::DmPlan), relocated to
// a copy of the blob at base; each view's own arrays are relocated beside it.
template <class View>
void relocate_circuit_arrays(View& v, const View& offsets, const std::byte* base) {
  v.ops = relocate(offsets.ops, base);
  v.params = relocate(offsets.params, base);
  v.fixed_blocks = relocate(offsets.fixed_blocks, base);
  v.terms = relocate(offsets.terms, base);
  v.term_begin = relocate(offsets.term_begin, base);
  v.probs_pos = relocate(offsets.probs_pos, base);
  v.probs_begin = relocate(offsets.probs_begin, base);
  v.probs_out = relocate(offsets.probs_out, base);
  v.perm_runs = relocate(offsets.perm_runs, base);
  v.perm_index = relocate(offsets.perm_index, base);
  v.perm_phase = relocate(offsets.perm_phase, base);
}

}  // namespace qfleet::detail
