// LibTorch's archives inside a tensor file (qfleet/tensor_file.hpp): the tree of an
// archive's entries as JSON, its tensors as the file's tensors, and back.
//
// An archive is written by LibTorch's own code (nn::Module::save, each optimizer's save),
// whose entries this reads from an archive it has just made in memory. Reading a file
// goes the other way: an archive is built from the file's entries with OutputArchive's
// write calls, serialised in memory and handed to InputArchive, so every byte LibTorch's
// archive reader sees was made here. Entry names become attribute names in the TorchScript
// source LibTorch generates for that archive, so they are restricted to [A-Za-z0-9_./-]
// (every name LibTorch's modules and optimizers write): a name from a file can never
// become code.
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "first_line.hpp"
#include "qfleet/tensor_file.hpp"

namespace qfleet::train {

namespace {

using json = nlohmann::json;
constexpr int kMaxDepth = 32;  // nested archives and values; LibTorch's are a few deep

bool safe_key(const std::string& key) {
  return !key.empty() && key.size() <= 256 && std::all_of(key.begin(), key.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
                  c == '/' || c == '-';
         });
}

// ---- an archive's entries into the file --------------------------------------------

json value_node(const c10::IValue& v, const std::string& path, TensorFile& file);

json list_node(const c10::IValue& v, const std::string& path, TensorFile& file) {
  const std::string of = v.type()->containedType(0)->str();
  if (of != "int" && of != "float" && of != "bool" && of != "str" && of != "Tensor")
    throw TensorFileError("archive entry '" + path + "' is a list of " + of + ", which a tensor file does not hold");
  json items = json::array();
  const auto list = v.toList();
  for (std::size_t i = 0; i < list.size(); ++i) items.push_back(value_node(list.get(i), path + "/" + std::to_string(i), file));
  return {{"list", items}, {"of", of}};
}

json value_node(const c10::IValue& v, const std::string& path, TensorFile& file) {
  if (v.isTensor()) {
    if (!file.tensors.emplace(path, v.toTensor()).second)
      throw TensorFileError("archive entry '" + path + "' is named twice");
    json node{{"tensor", path}};
    if (!v.toTensor().device().is_cpu()) node["device"] = v.toTensor().device().str();
    return node;
  }
  if (v.isInt()) return {{"int", v.toInt()}};
  if (v.isDouble()) {
    const double d = v.toDouble();
    if (std::isfinite(d)) return {{"double", d}};
    return {{"double", std::isnan(d) ? "nan" : (d > 0 ? "inf" : "-inf")}};
  }
  if (v.isBool()) return {{"bool", v.toBool()}};
  if (v.isString()) return {{"string", v.toStringRef()}};
  if (v.isNone()) return {{"none", true}};
  if (v.isTuple()) {
    json items = json::array();
    const auto& elems = v.toTupleRef().elements();
    for (std::size_t i = 0; i < elems.size(); ++i) items.push_back(value_node(elems[i], path + "/" + std::to_string(i), file));
    return {{"tuple", items}};
  }
  if (v.isList()) return list_node(v, path, file);
  throw TensorFileError("archive entry '" + path + "' is a " + v.type()->str() + ", which a tensor file does not hold");
}

json archive_node(torch::serialize::InputArchive& archive, const std::string& path, TensorFile& file) {
  json entries = json::object();
  for (const std::string& key : archive.keys()) {
    if (!safe_key(key)) throw TensorFileError("archive entry '" + path + "/" + key + "' has a name a tensor file does not hold");
    c10::IValue v;
    archive.read(key, v);
    if (v.isObject()) {
      torch::serialize::InputArchive sub;
      archive.read(key, sub);
      entries[key] = {{"archive", archive_node(sub, path + "/" + key, file)}};
    } else {
      entries[key] = value_node(v, path + "/" + key, file);
    }
  }
  return entries;
}

// ---- the file's entries into an archive --------------------------------------------

struct Builder {
  const TensorFile& file;
  const std::string& path;

  TensorFileError fail(const std::string& where, const std::string& why) const {
    return TensorFileError(path + ": archive entry '" + where + "' " + why);
  }

  torch::Tensor tensor(const json& node, const std::string& where) const {
    if (!node["tensor"].is_string()) throw fail(where, "names no tensor");
    const auto it = file.tensors.find(node["tensor"].get<std::string>());
    if (it == file.tensors.end()) throw fail(where, "names the tensor " + node["tensor"].dump() + ", which the file lacks");
    if (!node.contains("device")) return it->second;
    if (!node["device"].is_string()) throw fail(where, "has a device that is not a text");
    try {
      return it->second.to(torch::Device(node["device"].get<std::string>()));
    } catch (const c10::Error& e) {
      throw fail(where, "cannot be placed on " + node["device"].dump() + ": " + first_line(e.what()));
    }
  }

  c10::IValue value(const json& node, const std::string& where, int depth) const {
    if (!node.is_object() || node.size() < 1) throw fail(where, "is not an entry");
    if (depth > kMaxDepth) throw fail(where, "is nested deeper than " + std::to_string(kMaxDepth) + " levels");
    if (node.contains("tensor")) return tensor(node, where);
    if (node.contains("int") && node["int"].is_number_integer()) return node["int"].get<int64_t>();
    if (node.contains("double")) {
      const json& d = node["double"];
      if (d.is_number()) return d.get<double>();
      if (d == "nan") return std::nan("");
      if (d == "inf" || d == "-inf") return d == "inf" ? INFINITY : -INFINITY;
    }
    if (node.contains("bool") && node["bool"].is_boolean()) return node["bool"].get<bool>();
    if (node.contains("string") && node["string"].is_string()) return node["string"].get<std::string>();
    if (node.contains("none")) return c10::IValue();
    if (node.contains("tuple") && node["tuple"].is_array()) {
      std::vector<c10::IValue> items;
      for (std::size_t i = 0; i < node["tuple"].size(); ++i) items.push_back(value(node["tuple"][i], where + "/" + std::to_string(i), depth + 1));
      return c10::ivalue::Tuple::create(std::move(items));
    }
    if (node.contains("list") && node["list"].is_array() && node.contains("of")) return list(node, where, depth);
    throw fail(where, "is not an entry a tensor file holds");
  }

  c10::IValue list(const json& node, const std::string& where, int depth) const {
    const json& of = node["of"];
    c10::TypePtr type;
    if (of == "int") type = c10::IntType::get();
    if (of == "float") type = c10::FloatType::get();
    if (of == "bool") type = c10::BoolType::get();
    if (of == "str") type = c10::StringType::get();
    if (of == "Tensor") type = c10::TensorType::get();
    if (!type) throw fail(where, "is a list of " + of.dump() + ", which a tensor file does not hold");
    c10::impl::GenericList items(type);
    for (std::size_t i = 0; i < node["list"].size(); ++i) {
      c10::IValue item = value(node["list"][i], where + "/" + std::to_string(i), depth + 1);
      if (!item.type()->isSubtypeOf(*type)) throw fail(where, "holds an item that is not " + of.get<std::string>());
      items.push_back(std::move(item));
    }
    return items;
  }

  void archive(torch::serialize::OutputArchive& out, const json& entries, const std::string& where, int depth) const {
    if (!entries.is_object()) throw fail(where, "is not an archive");
    if (depth > kMaxDepth) throw fail(where, "is nested deeper than " + std::to_string(kMaxDepth) + " archives");
    for (const auto& [key, node] : entries.items()) {
      const std::string at = where + "/" + key;
      if (!safe_key(key)) throw fail(at, "has a name a tensor file does not hold");
      if (node.is_object() && node.contains("archive")) {
        torch::serialize::OutputArchive sub(out.compilation_unit());
        archive(sub, node["archive"], at, depth + 1);
        out.write(key, sub);
      } else if (node.is_object() && node.contains("tensor")) {
        out.write(key, tensor(node, at));
      } else {
        out.write(key, value(node, at, depth + 1));
      }
    }
  }
};

}  // namespace

void put_archive(TensorFile& file, const std::string& name, torch::serialize::OutputArchive& archive) {
  if (!safe_key(name)) throw TensorFileError("an archive cannot be named '" + name + "'");
  std::ostringstream bytes;
  archive.save_to(bytes);
  const std::string b = bytes.str();
  torch::serialize::InputArchive in;  // the bytes LibTorch has just written, not a file's
  in.load_from(b.data(), b.size());
  file.texts["archive." + name] = archive_node(in, name, file).dump();
}

bool get_archive(const TensorFile& file, const std::string& name, torch::serialize::InputArchive& archive,
                 const std::string& path) {
  const auto it = file.texts.find("archive." + name);
  if (it == file.texts.end()) return false;
  const json tree = json::parse(it->second, nullptr, false);
  const Builder build{file, path};
  torch::serialize::OutputArchive out;
  try {
    build.archive(out, tree, name, 0);
    std::ostringstream bytes;
    out.save_to(bytes);
    const std::string b = bytes.str();
    archive.load_from(b.data(), b.size());
  } catch (const c10::Error& e) {
    throw TensorFileError(path + ": archive '" + name + "' does not decode: " + first_line(e.what()));
  }
  return true;
}

void put_module(TensorFile& file, const std::string& name, torch::nn::Module& module) {
  torch::serialize::OutputArchive archive;
  module.save(archive);
  put_archive(file, name, archive);
}

void get_module(const TensorFile& file, const std::string& name, torch::nn::Module& module, const std::string& path) {
  // LibTorch's load replaces a parameter of another shape without a word: check first.
  auto check = [&](const std::string& dotted, const torch::Tensor& live) {
    std::string inner = dotted;  // "child.weight": the archive's child "child", its entry "weight"
    std::replace(inner.begin(), inner.end(), '.', '/');
    const std::string key = name + "/" + inner;
    const auto it = file.tensors.find(key);
    if (it == file.tensors.end()) throw TensorFileError(path + ": module '" + name + "' has no tensor '" + dotted + "'");
    if (it->second.sizes() != live.sizes() || it->second.scalar_type() != live.scalar_type())
      throw TensorFileError(path + ": module '" + name + "': tensor '" + dotted + "' is " +
                            c10::str(it->second.sizes(), " ", it->second.scalar_type()) + " in the file, " +
                            c10::str(live.sizes(), " ", live.scalar_type()) + " in this model");
  };
  for (const auto& p : module.named_parameters()) check(p.key(), p.value());
  for (const auto& b : module.named_buffers()) check(b.key(), b.value());
  torch::serialize::InputArchive archive;
  if (!get_archive(file, name, archive, path)) throw TensorFileError(path + ": has no module '" + name + "'");
  try {
    module.load(archive);
  } catch (const c10::Error& e) {
    throw TensorFileError(path + ": module '" + name + "' does not fit this model: " + first_line(e.what()));
  }
}

}  // namespace qfleet::train
