// qfleet's tensor files: encoding, checking and decoding (qfleet/tensor_file.hpp).
#include "qfleet/tensor_file.hpp"

#include <c10/util/hash.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "qfleet/files.hpp"

namespace qfleet::train {

namespace {

static_assert(std::endian::native == std::endian::little,
              "tensor files hold little-endian bytes (safetensors' layout); this machine is not");

using json = nlohmann::json;

struct DtypeRow {
  torch::ScalarType type;
  const char* name;  // safetensors' name
};
// The dtypes safetensors names; complex tensors travel as their real view.
constexpr std::array<DtypeRow, 10> kDtypes{{{torch::kFloat64, "F64"},
                                            {torch::kFloat32, "F32"},
                                            {torch::kFloat16, "F16"},
                                            {torch::kBFloat16, "BF16"},
                                            {torch::kInt64, "I64"},
                                            {torch::kInt32, "I32"},
                                            {torch::kInt16, "I16"},
                                            {torch::kInt8, "I8"},
                                            {torch::kUInt8, "U8"},
                                            {torch::kBool, "BOOL"}}};

// The header opens with the digest, so that a reader finds it before parsing anything.
constexpr std::string_view kPrefix = R"({"__metadata__":{"qfleet.sha1":")";
constexpr std::size_t kDigestDigits = 40;
constexpr std::size_t kDigestAt = 8 + kPrefix.size();  // the digest's first byte in the file

std::string quoted(const std::string& s, const std::string& what) {
  try {
    return json(s).dump(-1, ' ', false, json::error_handler_t::strict);
  } catch (const json::exception&) {
    throw TensorFileError(what + " is not UTF-8 text: a tensor file's header is JSON");
  }
}

const char* dtype_name(torch::ScalarType t, const std::string& tensor) {
  for (const auto& row : kDtypes)
    if (row.type == t) return row.name;
  throw TensorFileError("tensor '" + tensor + "' is " + std::string(c10::toString(t)) +
                        ", which a tensor file cannot hold");
}

}  // namespace

std::string encode_tensor_file(const TensorFile& file) {
  std::string header = std::string(kPrefix) + std::string(kDigestDigits, '0') + "\",\"qfleet.format\":" +
                       quoted(file.format, "the format's name");
  for (const auto& [name, text] : file.texts) {
    if (name.rfind("qfleet.", 0) == 0) throw TensorFileError("text '" + name + "': names starting 'qfleet.' are the format's");
    header += "," + quoted(name, "a text's name") + ":" + quoted(text, "text '" + name + "'");
  }
  std::vector<torch::Tensor> data;
  json complex = json::array();
  std::string tensors;
  std::uint64_t offset = 0;
  for (const auto& [name, tensor] : file.tensors) {
    if (name == "__metadata__") throw TensorFileError("a tensor cannot be named __metadata__");
    torch::Tensor t = tensor.detach().to(torch::kCPU);
    if (t.is_complex()) {
      t = torch::view_as_real(t.resolve_conj());
      complex.push_back(name);
    }
    t = t.contiguous();
    const std::uint64_t bytes = std::uint64_t(t.numel()) * t.element_size();
    json shape = json::array();
    for (const int64_t d : t.sizes()) shape.push_back(d);
    tensors += "," + quoted(name, "a tensor's name") + ":{\"dtype\":\"" + dtype_name(t.scalar_type(), name) +
               "\",\"shape\":" + shape.dump() + ",\"data_offsets\":[" + std::to_string(offset) + "," +
               std::to_string(offset + bytes) + "]}";
    offset += bytes;
    data.push_back(t);
  }
  if (!complex.empty()) header += ",\"qfleet.complex\":" + quoted(complex.dump(), "");
  header += "}" + tensors + "}";
  header.append((8 - header.size() % 8) % 8, ' ');  // the data 8-byte aligned, as safetensors' writers do

  std::string out(8, '\0');
  const std::uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  out.reserve(8 + header.size() + offset);
  out += header;
  for (const auto& t : data) out.append(static_cast<const char*>(t.data_ptr()), std::size_t(t.nbytes()));
  const std::string digest = c10::sha1(out).str();
  out.replace(kDigestAt, kDigestDigits, digest);
  return out;
}

namespace {

// The shape's element count, or -1 where a dimension is negative or the count overflows.
int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (const int64_t d : shape) {
    if (d < 0 || (d > 0 && n > std::numeric_limits<int64_t>::max() / d)) return -1;
    n *= d;
  }
  return n;
}

torch::Tensor decode_tensor(const json& entry, const std::string& name, std::string_view data,
                            const std::function<TensorFileError(const std::string&)>& fail) {
  const std::string what = "tensor '" + name + "'";
  if (!entry.is_object() || !entry.contains("dtype") || !entry["dtype"].is_string() || !entry.contains("shape") ||
      !entry["shape"].is_array() || !entry.contains("data_offsets") || !entry["data_offsets"].is_array() ||
      entry["data_offsets"].size() != 2)
    throw fail(what + " lacks its dtype, shape or data_offsets");
  const auto row = std::find_if(kDtypes.begin(), kDtypes.end(),
                                [&](const DtypeRow& r) { return entry["dtype"].get<std::string>() == r.name; });
  if (row == kDtypes.end()) throw fail(what + " has the unknown dtype " + entry["dtype"].dump());
  std::vector<int64_t> shape;
  for (const auto& d : entry["shape"]) {
    if (!d.is_number_integer()) throw fail(what + "'s shape is not a list of integers");
    shape.push_back(d.get<int64_t>());
  }
  const auto& off = entry["data_offsets"];
  if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned()) throw fail(what + "'s data_offsets are not byte positions");
  const std::uint64_t begin = off[0].get<std::uint64_t>(), end = off[1].get<std::uint64_t>();
  const int64_t count = element_count(shape);
  const std::uint64_t item = c10::elementSize(row->type);
  if (count < 0 || begin > end || end > data.size() || (end - begin) / item != std::uint64_t(count) ||
      (end - begin) % item != 0)
    throw fail(what + " does not fit the file: shape " + entry["shape"].dump() + " of " + row->name + " in bytes [" +
               std::to_string(begin) + ", " + std::to_string(end) + ") of " + std::to_string(data.size()));
  torch::Tensor t = torch::empty(shape, torch::TensorOptions().dtype(row->type));
  if (row->type == torch::kBool &&
      std::any_of(data.begin() + begin, data.begin() + end, [](char c) { return c != 0 && c != 1; }))
    throw fail(what + " holds a boolean that is neither 0 nor 1");
  if (end > begin) std::memcpy(t.data_ptr(), data.data() + begin, end - begin);
  return t;
}

}  // namespace

TensorFile decode_tensor_file(std::string bytes, const std::string& name, const std::string& format) {
  auto fail = [&](const std::string& why) { return TensorFileError(name + ": " + why); };
  if (bytes.rfind("PK\x03\x04", 0) == 0)
    throw fail("is a LibTorch archive (a zip), which qfleet does not read: loading one can run code it carries. "
               "qfleet writes its files as tensor files; write this one again with this qfleet");
  std::uint64_t n = 0;
  if (bytes.size() >= 8) std::memcpy(&n, bytes.data(), 8);
  if (bytes.size() < 8 || n > kTensorFileMaxHeader || n > bytes.size() - 8 || n < kPrefix.size() + kDigestDigits + 1 ||
      std::string_view(bytes).substr(8, kPrefix.size()) != kPrefix || bytes[kDigestAt + kDigestDigits] != '"')
    throw fail("is not a qfleet tensor file, or is cut short (" + std::to_string(bytes.size()) + " bytes)");
  const std::string stored = bytes.substr(kDigestAt, kDigestDigits);
  if (!std::all_of(stored.begin(), stored.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }))
    throw fail("is not a qfleet tensor file (its digest is not 40 hexadecimal digits)");
  bytes.replace(kDigestAt, kDigestDigits, kDigestDigits, '0');
  const std::string actual = c10::sha1(bytes).str();
  if (actual != stored) throw fail("is damaged: its SHA-1 is " + actual + ", the file says " + stored);

  const json header = json::parse(bytes.begin() + 8, bytes.begin() + 8 + std::ptrdiff_t(n), nullptr, false);
  if (!header.is_object() || !header.contains("__metadata__") || !header["__metadata__"].is_object())
    throw fail("has a header that is not a JSON object with __metadata__");
  TensorFile out;
  std::vector<std::string> complex;
  for (const auto& [key, value] : header["__metadata__"].items()) {
    if (!value.is_string()) throw fail("metadata entry '" + key + "' is not a text");
    if (key == "qfleet.format") {
      out.format = value.get<std::string>();
    } else if (key == "qfleet.complex") {
      const json names = json::parse(value.get<std::string>(), nullptr, false);
      if (!names.is_array()) throw fail("metadata entry 'qfleet.complex' is not a list of names");
      for (const auto& c : names) {
        if (!c.is_string()) throw fail("metadata entry 'qfleet.complex' is not a list of names");
        complex.push_back(c.get<std::string>());
      }
    } else if (key.rfind("qfleet.", 0) != 0) {
      out.texts[key] = value.get<std::string>();
    }
  }
  if (!format.empty() && out.format != format)
    throw fail("is a " + (out.format.empty() ? std::string("file of no format") : "'" + out.format + "'") +
               " file, not a '" + format + "'");
  const std::string_view data = std::string_view(bytes).substr(8 + n);
  for (const auto& [key, entry] : header.items())
    if (key != "__metadata__") out.tensors[key] = decode_tensor(entry, key, data, fail);
  for (const auto& c : complex) {
    auto it = out.tensors.find(c);
    if (it == out.tensors.end() || it->second.dim() == 0 || it->second.size(-1) != 2 ||
        !(it->second.scalar_type() == torch::kFloat32 || it->second.scalar_type() == torch::kFloat64))
      throw fail("complex tensor '" + c + "' is not stored as [..., 2] real pairs");
    it->second = torch::view_as_complex(it->second).clone();
  }
  return out;
}

void write_tensor_file(const std::string& path, const TensorFile& file) {
  std::string bytes;
  try {
    bytes = encode_tensor_file(file);
  } catch (const TensorFileError& e) {
    throw TensorFileError(path + ": " + e.what());
  }
  qfleet::write_file_atomic(path, bytes);
}

TensorFile read_tensor_file(const std::string& path, const std::string& format) {
  std::string bytes;
  try {
    bytes = qfleet::read_file_bounded(path, kTensorFileMaxBytes);  // no device or folder; a longer file unread
  } catch (const std::runtime_error& e) {
    throw TensorFileError(e.what());  // ("cannot read PATH: ...")
  }
  return decode_tensor_file(std::move(bytes), path, format);
}

}  // namespace qfleet::train
