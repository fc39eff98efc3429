// Checkpoints of a training run: model, optimizer, loss scaler, RNG states, step and
// configuration hash in one tensor file (qfleet/tensor_file.hpp: data only, with the SHA-1
// of the whole file), written atomically (qfleet/train.hpp). A resume restores every generator the run draws from, so it
// continues bit for bit where an uninterrupted run would be (tests/torch/test_train_state.cpp).
#include <ATen/Context.h>
#include <ATen/core/Generator.h>

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "qfleet/version.hpp"
#include "qfleet_app/commit.hpp"  // (generated: cmake/qfleet_commit.cmake)
#include "qfleet/tensor_file.hpp"
#include "qfleet/train.hpp"
#include "first_line.hpp"

namespace qfleet::train {

namespace {

// A tensor file (qfleet/tensor_file.hpp): data only, its SHA-1 checked before anything is
// parsed. The earlier formats (/1, /2) were LibTorch archives, which can hold code that
// runs as they load; they are refused unread.
constexpr const char* kFormat = "qfleet-train-checkpoint/3";

// The default generators saved besides the user's: the CPU's, and each CUDA device's.
std::vector<std::pair<std::string, at::Generator>> default_generators() {
  std::vector<std::pair<std::string, at::Generator>> g{{"default.cpu", at::detail::getDefaultCPUGenerator()}};
  if (at::hasCUDA()) {
    const int n = at::detail::getCUDAHooks().deviceCount();
    for (int i = 0; i < n; ++i)
      g.emplace_back("default.cuda" + std::to_string(i),
                     at::globalContext().defaultGenerator(torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(i))));
  }
  return g;
}

torch::Tensor generator_state(at::Generator& gen) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

}  // namespace

std::string config_hash(const std::string& config) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  for (unsigned char c : config) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

void save_checkpoint(const std::string& path, const TrainState& state) {
  TensorFile file;
  file.format = kFormat;
  file.texts["step"] = std::to_string(state.step);
  file.texts["version"] = QFLEET_VERSION_STRING;  // what wrote it (not checked on resume)
  file.texts["commit"] = QFLEET_GIT_COMMIT;
  file.texts["config_hash"] = config_hash(state.config);
  file.texts["config"] = state.config;  // to name what differs on a refused resume
  try {
    for (const auto& [name, m] : state.modules) put_module(file, "module." + name, *m);
    auto put = [&](const std::string& name, auto& saver) {
      torch::serialize::OutputArchive sub;
      saver.save(sub);
      put_archive(file, name, sub);
    };
    for (const auto& [name, o] : state.optimizers) put("optimizer." + name, *o);
    for (const auto& [name, s] : state.scalers) put("scaler." + name, *s);
    for (const auto& [name, o] : state.device_optimizers) put("device_optimizer." + name, *o);
    auto gens = default_generators();
    for (const auto& g : state.generators) gens.emplace_back("user." + g.first, g.second);
    for (auto& [name, g] : gens) file.tensors["rng." + name] = generator_state(g);
    for (const auto& [name, t] : state.tensors) file.tensors["tensor." + name] = t.detach().cpu();
    for (const auto& [name, text] : state.texts) file.texts["text." + name] = *text;
  } catch (const TensorFileError& e) {
    throw CheckpointError("checkpoint " + path + ": " + e.what());
  }
  write_tensor_file(path, file);
}

namespace {

CheckpointError failure(const std::string& path, const std::string& why) {
  return CheckpointError("checkpoint " + path + ": " + why);
}

// The checkpoint's entries, its digest and format checked.
TensorFile open_checkpoint(const std::string& path) {
  if (!std::filesystem::exists(path)) throw CheckpointError("no checkpoint at " + path);
  try {
    return read_tensor_file(path, kFormat);
  } catch (const TensorFileError& e) {
    throw CheckpointError("checkpoint " + std::string(e.what()));
  }
}

const std::string& text(const TensorFile& file, const std::string& path, const std::string& key) {
  const auto it = file.texts.find(key);
  if (it == file.texts.end()) throw failure(path, "has no entry '" + key + "'");
  return it->second;
}

int64_t read_step(const TensorFile& file, const std::string& path) {
  const std::string& s = text(file, path, "step");
  int64_t step = -1;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), step);
  if (ec != std::errc() || end != s.data() + s.size() || step < 0) throw failure(path, "has no valid step");
  return step;
}

// "key (checkpoint A, now B), ..." when both texts are JSON objects; "" otherwise.
std::string differing_keys(const std::string& saved, const std::string& now) {
  const auto a = nlohmann::json::parse(saved, nullptr, false), b = nlohmann::json::parse(now, nullptr, false);
  if (!a.is_object() || !b.is_object()) return "";
  std::string out;
  auto add = [&](const std::string& key) {
    out += (out.empty() ? "" : ", ") + key + " (checkpoint " + (a.contains(key) ? a[key].dump() : "absent") +
           ", now " + (b.contains(key) ? b[key].dump() : "absent") + ")";
  };
  for (const auto& [k, v] : b.items())
    if (!a.contains(k) || a[k] != v) add(k);
  for (const auto& [k, v] : a.items())
    if (!b.contains(k)) add(k);
  return out;
}

void check_config(const TensorFile& file, const std::string& path, const std::string& config) {
  const std::string& hash = text(file, path, "config_hash");
  const std::string now = config_hash(config);
  if (hash == now) return;
  const auto saved = file.texts.find("config");
  const std::string keys = differing_keys(saved == file.texts.end() ? "" : saved->second, config);
  throw CheckpointConfigError("checkpoint " + path + ": was written by another configuration (" +
                              (keys.empty() ? "hash " + hash + ", this run's " + now : "it differs in " + keys) +
                              "); resume with the configuration that wrote it");
}

}  // namespace

void load_checkpoint(const std::string& path, TrainState& state) {
  auto fail = [&](const std::string& why) { return failure(path, why); };
  const TensorFile file = open_checkpoint(path);
  const int64_t step = read_step(file, path);
  check_config(file, path, state.config);

  // Read every entry before changing anything, so a bad file leaves the run as it was.
  auto read_tensor = [&](const std::string& key) {
    const auto it = file.tensors.find(key);
    if (it == file.tensors.end()) throw fail("has no entry '" + key + "'");
    return it->second;
  };
  auto gens = default_generators();
  for (const auto& g : state.generators) gens.emplace_back("user." + g.first, g.second);
  std::vector<torch::Tensor> gen_states, tensors;
  for (auto& [name, g] : gens) {
    // A checkpoint from a machine with fewer CUDA devices: their generators stay as they are.
    const bool optional = name.rfind("default.cuda", 0) == 0 && !file.tensors.count("rng." + name);
    gen_states.push_back(optional ? torch::Tensor() : read_tensor("rng." + name));
  }
  for (const auto& [name, live] : state.tensors) {
    torch::Tensor t = read_tensor("tensor." + name);
    if (t.sizes() != live.sizes() || t.scalar_type() != live.scalar_type())
      throw fail("tensor '" + name + "' is " + c10::str(t.sizes(), " ", t.scalar_type()) + ", the run's is " +
                 c10::str(live.sizes(), " ", live.scalar_type()));
    tensors.push_back(t);
  }
  std::vector<std::string> texts;
  for (const auto& [name, t] : state.texts) texts.push_back(text(file, path, "text." + name));
  auto sub_archive = [&](const std::string& key) {
    torch::serialize::InputArchive sub;
    try {
      if (!get_archive(file, key, sub, path)) throw fail("has no entry '" + key + "'");
    } catch (const TensorFileError& e) {
      throw CheckpointError("checkpoint " + std::string(e.what()));
    }
    return sub;
  };
  std::vector<torch::serialize::InputArchive> opts, scalers, dopts;
  for (const auto& o : state.optimizers) opts.push_back(sub_archive("optimizer." + o.first));
  for (const auto& s : state.scalers) scalers.push_back(sub_archive("scaler." + s.first));
  for (const auto& o : state.device_optimizers) dopts.push_back(sub_archive("device_optimizer." + o.first));

  std::string what;
  try {
    // (get_module checks every shape before it changes a parameter.)
    for (const auto& [name, m] : state.modules) get_module(file, "module." + name, *m, path);
    for (std::size_t i = 0; i < state.optimizers.size(); ++i) {
      what = "optimizer '" + state.optimizers[i].first + "'";
      state.optimizers[i].second->load(opts[i]);
    }
    for (std::size_t i = 0; i < state.scalers.size(); ++i) {
      what = "scaler '" + state.scalers[i].first + "'";
      state.scalers[i].second->load(scalers[i]);
    }
    for (std::size_t i = 0; i < state.device_optimizers.size(); ++i) {
      what = "optimizer '" + state.device_optimizers[i].first + "'";
      state.device_optimizers[i].second->load(dopts[i]);
    }
    for (std::size_t i = 0; i < gens.size(); ++i) {
      if (!gen_states[i].defined()) continue;
      what = "generator '" + gens[i].first + "'";
      std::lock_guard<std::mutex> lock(gens[i].second.mutex());
      gens[i].second.set_state(gen_states[i]);
    }
  } catch (const TensorFileError& e) {
    throw CheckpointError("checkpoint " + std::string(e.what()));
  } catch (const std::exception& e) {
    throw fail(what + " does not fit this run: " + first_line(e.what()));
  }
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < tensors.size(); ++i) state.tensors[i].second.copy_(tensors[i]);
  for (std::size_t i = 0; i < texts.size(); ++i) *state.texts[i].second = texts[i];
  state.step = step;
}

CheckpointContents read_checkpoint(const std::string& path) {
  const TensorFile file = open_checkpoint(path);
  CheckpointContents c;
  c.step = read_step(file, path);
  const auto config = file.texts.find("config");
  if (config != file.texts.end()) c.config = config->second;
  for (const auto& [key, value] : file.texts)
    if (key.rfind("text.", 0) == 0) c.texts[key.substr(5)] = value;
  for (const auto& [key, t] : file.tensors)
    if (key.rfind("tensor.", 0) == 0) c.tensors[key.substr(7)] = t;
  return c;
}

}  // namespace qfleet::train
