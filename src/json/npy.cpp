// NumPy .npy reader and writer (npy.hpp). The header is a Python dict literal,
// {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }, parsed strictly here
// (numpy writes exactly these three keys).
#include "npy.hpp"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <type_traits>

#include "json_common.hpp"
#include "qfleet/files.hpp"
#include "qfleet/json_problem.hpp"

namespace qfleet::json_problem::npy {

using internal::quote;
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

[[noreturn]] void fail(const std::string& path, const std::string& what,
                       const std::string& message) {
  throw ProblemError(path, what + ": " + message);
}

// The header dict, token by token.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path, const std::string& what)
      : s_(text), path_(path), what_(what) {}

  void parse(std::string& descr, bool& fortran, std::vector<std::size_t>& shape) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = quoted();
      expect(':');
      if (key == "descr") {
        descr = quoted();
        have_descr = true;
      } else if (key == "fortran_order") {
        fortran = boolean();
        have_fortran = true;
      } else if (key == "shape") {
        shape = tuple();
        have_shape = true;
      } else {
        bad("unknown header key '" + key + "' (a .npy header has descr, fortran_order and shape)");
      }
      skip_space();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      skip_space();
      if (peek() != '}') bad("expected ',' or '}' in the header");
    }
    ++i_;
    if (!have_descr || !have_fortran || !have_shape)
      bad("the header lacks descr, fortran_order or shape");
  }

 private:
  [[noreturn]] void bad(const std::string& m) { fail(path_, what_, "bad .npy header: " + m); }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t')) ++i_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) bad(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string quoted() {
    skip_space();
    const char q = peek();
    if (q != '\'' && q != '"') bad("expected a quoted string");
    const std::size_t end = s_.find(q, i_ + 1);
    if (end == std::string_view::npos) bad("unterminated string");
    std::string out(s_.substr(i_ + 1, end - i_ - 1));
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_space();
    if (s_.substr(i_, 4) == "True") {
      i_ += 4;
      return true;
    }
    if (s_.substr(i_, 5) == "False") {
      i_ += 5;
      return false;
    }
    bad("fortran_order must be True or False");
  }
  std::vector<std::size_t> tuple() {
    expect('(');
    std::vector<std::size_t> dims;
    while (true) {
      skip_space();
      if (peek() == ')') break;
      std::size_t v = 0;
      bool digits = false;
      while (peek() >= '0' && peek() <= '9') {
        const std::size_t d = static_cast<std::size_t>(peek() - '0');
        if (v > (std::numeric_limits<std::size_t>::max() - d) / 10) bad("a dimension is too large");
        v = v * 10 + d;
        digits = true;
        ++i_;
      }
      if (!digits) bad("a shape entry is not a non-negative integer");
      if (dims.size() == 32) bad("more than 32 dimensions");
      dims.push_back(v);
      skip_space();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      if (peek() != ')') bad("expected ',' or ')' in the shape");
    }
    ++i_;
    return dims;
  }

  std::string_view s_;
  std::size_t i_ = 0;
  const std::string& path_;
  const std::string& what_;
};

template <class T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// The data as doubles, every value checked: finite, and an int64 exact as a double.
template <class T>
void convert(std::string_view data, std::vector<double>& out, const std::string& path,
             const std::string& what) {
  const std::size_t count = out.size();
  if constexpr (std::is_same_v<T, double>) {
    if (count > 0) std::memcpy(out.data(), data.data(), count * sizeof(double));
  } else {
    for (std::size_t i = 0; i < count; ++i) {
      const T v = load<T>(data.data() + i * sizeof(T));
      if constexpr (std::is_same_v<T, std::int64_t>) {
        if (v > (std::int64_t{1} << 53) || v < -(std::int64_t{1} << 53))
          fail(path, what,
               "value " + std::to_string(i) + " (" + std::to_string(v) +
                   ") is not exact as a double");
      }
      out[i] = static_cast<double>(v);
    }
  }
  if constexpr (std::is_floating_point_v<T>) {
    for (std::size_t i = 0; i < count; ++i) {
      if (!std::isfinite(out[i]))
        fail(path, what, "value " + std::to_string(i) + " (flat index) is not finite");
    }
  }
}

std::string shape_text(const std::vector<std::size_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace

Array parse(std::string_view b, const std::string& path, const std::string& what) {
  static_assert(std::numeric_limits<double>::is_iec559, "float64 is IEEE 754 here");
  if (b.size() < 10 || b.substr(0, kMagic.size()) != kMagic)
    fail(path, what, "not a .npy file (it does not start with \\x93NUMPY)");
  const auto major = static_cast<unsigned char>(b[6]);
  std::size_t hlen = 0, start = 0;
  if (major == 1) {
    hlen = static_cast<unsigned char>(b[8]) | (std::size_t{static_cast<unsigned char>(b[9])} << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (b.size() < 12) fail(path, what, "truncated .npy header");
    for (int k = 3; k >= 0; --k)
      hlen = (hlen << 8) | static_cast<unsigned char>(b[8 + static_cast<std::size_t>(k)]);
    start = 12;
  } else {
    fail(path, what,
         "unsupported .npy format version " + std::to_string(major) + " (1, 2 and 3 are read)");
  }
  if (hlen > b.size() - start) fail(path, what, "truncated .npy header");
  std::string descr;
  bool fortran = false;
  Array a;
  HeaderParser(b.substr(start, hlen), path, what).parse(descr, fortran, a.shape);
  if (fortran)
    fail(path, what, "is in Fortran order; save a C-order array (numpy.ascontiguousarray)");
  // The dtype is read once: its item size and its conversion loop (one loop per dtype, the
  // test out of the per-value loop: a B = 32,768 batch of 4 features is 131,072 values).
  using Convert =
      void (*)(std::string_view, std::vector<double>&, const std::string&, const std::string&);
  std::size_t item = 0;
  Convert convert_data = nullptr;
  if (descr == "<f8") {
    item = 8, convert_data = convert<double>;
  } else if (descr == "<i8") {
    item = 8, convert_data = convert<std::int64_t>;
  } else if (descr == "<f4") {
    item = 4, convert_data = convert<float>;
  } else if (descr == "<i4") {
    item = 4, convert_data = convert<std::int32_t>;
  } else {
    fail(path, what,
         "has dtype '" + descr +
             "'; expected little-endian float64, float32, int64 or int32 "
             "('<f8', '<f4', '<i8', '<i4')");
  }
  std::size_t count = 1;
  for (const std::size_t d : a.shape) {
    if (d != 0 && count > kMaxValues / d) {
      fail(path, what,
           "shape " + shape_text(a.shape) + " holds more than 2^28 values (the limit per array)");
    }
    count *= d;
  }
  const std::string_view data = b.substr(start + hlen);
  if (data.size() != count * item) {
    fail(path, what,
         "holds " + std::to_string(data.size()) + " bytes of data, but shape " +
             shape_text(a.shape) + " of '" + descr + "' needs " + std::to_string(count * item) +
             (data.size() < count * item ? " (truncated file?)" : ""));
  }
  a.values.resize(count);
  convert_data(data, a.values, path, what);
  return a;
}

Array read(const std::string& file, const std::string& path) {
  const std::string what = "file " + quote(file);
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) fail(path, what, "cannot be opened (no such file)");
  if (!std::filesystem::is_regular_file(file, ec)) fail(path, what, "is not a regular file");
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(path, what, "cannot be opened");
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::size_t>(in.tellg());
  if (size > 64 + kMaxValues * 8)
    fail(path, what, "is larger than the 2^28 values an array may hold");
  in.seekg(0, std::ios::beg);
  std::string bytes(size, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (!in) fail(path, what, "could not be read");
  return parse(bytes, path, what);
}

Array read_ref(const nlohmann::json& v, const std::string& path) {
  const internal::Object o(v, path, {"npy"}, "a list, or {\"npy\": \"FILE.npy\"}");
  return read(internal::read_string(o.require("npy"), path + ".npy"), path);
}

void write(const std::string& file, const std::string& path, std::string_view descr,
           const std::vector<std::size_t>& shape, const void* data, std::size_t bytes) {
  std::string header = "{'descr': '" + std::string(descr) +
                       "', 'fortran_order': False, 'shape': " + shape_text(shape) + ", }";
  // Magic, version 1.0, header length; the whole preamble padded to a multiple of 64 and ended by
  // '\n'.
  const std::size_t unpadded = kMagic.size() + 4 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  const std::filesystem::path parent = std::filesystem::path(file).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
    fail(path, "file " + quote(file), "cannot be written (no folder " + quote(parent.string()) + ")");
  std::string out(kMagic);
  out += {char(1), char(0)};  // version 1.0
  const auto hlen = static_cast<std::uint16_t>(header.size());
  out += {static_cast<char>(hlen & 0xff), static_cast<char>(hlen >> 8)};
  out += header;
  out.append(static_cast<const char*>(data), bytes);
  try {
    write_file_atomic(file, out);  // never through a planted link; the old file or the whole new one
  } catch (const std::runtime_error& e) {
    fail(path, "file " + quote(file), std::string("cannot be written (") + e.what() + ")");
  }
}

}  // namespace qfleet::json_problem::npy
