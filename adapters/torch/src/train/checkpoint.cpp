// Checkpoints of a training run: model, optimizer, loss scaler, RNG states, step and
// configuration hash in one file of torch's archive format with the SHA-1 of its
// content, written atomically (qfleet/train.hpp). A resume restores every generator the run draws from, so it
// continues bit for bit where an uninterrupted run would be (tests/torch/test_train_state.cpp).
#include <ATen/Context.h>
#include <ATen/core/Generator.h>
#include <c10/util/hash.h>

#include <cstdio>
#include <filesystem>
#include <mutex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "qfleet/train.hpp"
#include "first_line.hpp"

namespace qfleet::train {

namespace {

constexpr const char* kFormat = "qfleet-train-checkpoint/1";  // the content's archive
// The file: the content's archive as one byte tensor beside its SHA-1. PyTorch's archives
// check no data on reading (bytes flipped inside a tensor load silently), so the digest
// is checked before anything is restored. It catches damage (a disk, a copy, a partial
// transfer), not forgery: whoever can rewrite the file can rewrite its digest too.
// SHA-1 because LibTorch ships it (c10/util/hash.h); any digest of this width would do.
constexpr const char* kSealedFormat = "qfleet-train-checkpoint/2";

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
  torch::serialize::OutputArchive ar;
  ar.write("qfleet.format", c10::IValue(std::string(kFormat)));
  ar.write("qfleet.step", c10::IValue(state.step));
  ar.write("qfleet.config_hash", c10::IValue(config_hash(state.config)));
  ar.write("qfleet.config", c10::IValue(state.config));  // to name what differs on a refused resume
  for (const auto& [name, m] : state.modules) {
    torch::serialize::OutputArchive sub;
    m->save(sub);
    ar.write("module." + name, sub);
  }
  for (const auto& [name, o] : state.optimizers) {
    torch::serialize::OutputArchive sub;
    o->save(sub);
    ar.write("optimizer." + name, sub);
  }
  for (const auto& [name, s] : state.scalers) {
    torch::serialize::OutputArchive sub;
    s->save(sub);
    ar.write("scaler." + name, sub);
  }
  for (const auto& [name, o] : state.device_optimizers) {
    torch::serialize::OutputArchive sub;
    o->save(sub);
    ar.write("device_optimizer." + name, sub);
  }
  auto gens = default_generators();
  for (const auto& g : state.generators) gens.emplace_back("user." + g.first, g.second);
  for (auto& [name, g] : gens) ar.write("rng." + name, generator_state(g));
  for (const auto& [name, t] : state.tensors) ar.write("tensor." + name, t.detach().cpu());
  for (const auto& [name, text] : state.texts) ar.write("text." + name, c10::IValue(*text));
  std::ostringstream content;
  ar.save_to(content);
  const std::string payload = content.str();
  torch::serialize::OutputArchive sealed;
  sealed.write("qfleet.format", c10::IValue(std::string(kSealedFormat)));
  sealed.write("qfleet.sha1", c10::IValue(c10::sha1(payload).str()));
  sealed.write("qfleet.content", torch::from_blob(const_cast<char*>(payload.data()), {int64_t(payload.size())},
                                                  torch::kUInt8));
  std::ostringstream os;
  sealed.save_to(os);
  write_file_atomic(path, os.str());
}

namespace {

CheckpointError failure(const std::string& path, const std::string& why) {
  return CheckpointError("checkpoint " + path + ": " + why);
}

// The content archive of a sealed checkpoint, its SHA-1 checked and its format entry read.
// Returns the content's bytes, kept by the caller as long as `ar` is read.
std::string open_checkpoint(const std::string& path, torch::serialize::InputArchive& ar) {
  auto fail = [&](const std::string& why) { return failure(path, why); };
  if (!std::filesystem::exists(path)) throw CheckpointError("no checkpoint at " + path);
  torch::serialize::InputArchive sealed;
  torch::Tensor content;
  try {
    sealed.load_from(path);
  } catch (const c10::Error& e) {
    throw fail("cannot be read: not a checkpoint or damaged (" + first_line(e.what()) + ")");
  }
  c10::IValue format, digest;
  if (!sealed.try_read("qfleet.format", format) || !format.isString())
    throw fail("is not a qfleet training checkpoint (format entry)");
  if (format.toStringRef() == kFormat)
    throw fail("was written by an older qfleet, without a checksum of its content; start the run again");
  if (format.toStringRef() != kSealedFormat) throw fail("is not a qfleet training checkpoint (format entry)");
  try {
    if (!sealed.try_read("qfleet.sha1", digest) || !digest.isString() || !sealed.try_read("qfleet.content", content) ||
        content.scalar_type() != torch::kUInt8 || content.dim() != 1)
      throw fail("is damaged: its content or checksum entry is missing");
  } catch (const c10::Error& e) {
    throw fail("is damaged: " + first_line(e.what()));
  }
  content = content.contiguous();
  std::string bytes(reinterpret_cast<const char*>(content.data_ptr<uint8_t>()), std::size_t(content.numel()));
  const std::string actual = c10::sha1(bytes).str();
  if (actual != digest.toStringRef())
    throw fail("is damaged: its content's SHA-1 is " + actual + ", the checkpoint says " + digest.toStringRef());
  try {
    ar.load_from(bytes.data(), bytes.size());
  } catch (const c10::Error& e) {
    throw fail("cannot be read: " + first_line(e.what()));
  }
  c10::IValue inner;
  if (!ar.try_read("qfleet.format", inner) || !inner.isString() || inner.toStringRef() != kFormat)
    throw fail("is not a qfleet training checkpoint (format entry)");
  return bytes;
}

c10::IValue entry(torch::serialize::InputArchive& ar, const std::string& path, const std::string& key) {
  c10::IValue v;
  if (!ar.try_read(key, v)) throw failure(path, "has no entry '" + key + "'");
  return v;
}

int64_t read_step(torch::serialize::InputArchive& ar, const std::string& path) {
  const c10::IValue step = entry(ar, path, "qfleet.step");
  if (!step.isInt() || step.toInt() < 0) throw failure(path, "has no valid step");
  return step.toInt();
}

// The configuration text the checkpoint kept ("" if written before it was kept).
std::string saved_config(torch::serialize::InputArchive& ar) {
  c10::IValue v;
  return ar.try_read("qfleet.config", v) && v.isString() ? v.toStringRef() : std::string();
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

void check_config(torch::serialize::InputArchive& ar, const std::string& path, const std::string& config) {
  const c10::IValue hash = entry(ar, path, "qfleet.config_hash");
  const std::string now = config_hash(config);
  if (hash.isString() && hash.toStringRef() == now) return;
  const std::string keys = differing_keys(saved_config(ar), config);
  throw CheckpointConfigError(
      "checkpoint " + path + ": was written by another configuration (" +
      (keys.empty() ? "hash " + (hash.isString() ? hash.toStringRef() : std::string("?")) + ", this run's " + now
                    : "it differs in " + keys) +
      "); resume with the configuration that wrote it");
}

}  // namespace

void load_checkpoint(const std::string& path, TrainState& state) {
  auto fail = [&](const std::string& why) { return failure(path, why); };
  torch::serialize::InputArchive ar;
  const std::string bytes = open_checkpoint(path, ar);
  const int64_t step = read_step(ar, path);
  check_config(ar, path, state.config);

  // Read every entry before changing anything, so a bad file leaves the run as it was.
  auto read_tensor = [&](const std::string& key) {
    torch::Tensor t;
    if (!ar.try_read(key, t)) throw fail("has no entry '" + key + "'");
    return t;
  };
  auto gens = default_generators();
  for (const auto& g : state.generators) gens.emplace_back("user." + g.first, g.second);
  std::vector<torch::Tensor> gen_states, tensors;
  for (auto& [name, g] : gens) {
    // A checkpoint from a machine with fewer CUDA devices: their generators stay as they are.
    if (name.rfind("default.cuda", 0) == 0) {
      torch::Tensor t;
      gen_states.push_back(ar.try_read("rng." + name, t) ? t : torch::Tensor());
    } else {
      gen_states.push_back(read_tensor("rng." + name));
    }
  }
  for (const auto& [name, live] : state.tensors) {
    torch::Tensor t = read_tensor("tensor." + name);
    if (t.sizes() != live.sizes() || t.scalar_type() != live.scalar_type())
      throw fail("tensor '" + name + "' is " + c10::str(t.sizes(), " ", t.scalar_type()) + ", the run's is " +
                 c10::str(live.sizes(), " ", live.scalar_type()));
    tensors.push_back(t);
  }
  std::vector<std::string> texts;
  for (const auto& [name, text] : state.texts) {
    const c10::IValue v = entry(ar, path, "text." + name);
    if (!v.isString()) throw fail("entry 'text." + name + "' is not a text");
    texts.push_back(v.toStringRef());
  }
  auto sub_archive = [&](const std::string& key) {
    torch::serialize::InputArchive sub;
    if (!ar.try_read(key, sub)) throw fail("has no entry '" + key + "'");
    return sub;
  };
  std::vector<torch::serialize::InputArchive> mods, opts, scalers, dopts;
  for (const auto& m : state.modules) mods.push_back(sub_archive("module." + m.first));
  for (const auto& o : state.optimizers) opts.push_back(sub_archive("optimizer." + o.first));
  for (const auto& s : state.scalers) scalers.push_back(sub_archive("scaler." + s.first));
  for (const auto& o : state.device_optimizers) dopts.push_back(sub_archive("device_optimizer." + o.first));

  std::string what;
  try {
    for (std::size_t i = 0; i < state.modules.size(); ++i) {
      what = "module '" + state.modules[i].first + "'";
      state.modules[i].second->load(mods[i]);
    }
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
  } catch (const std::exception& e) {
    throw fail(what + " does not fit this run: " + first_line(e.what()));
  }
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < tensors.size(); ++i) state.tensors[i].second.copy_(tensors[i]);
  for (std::size_t i = 0; i < texts.size(); ++i) *state.texts[i].second = texts[i];
  state.step = step;
}

CheckpointContents read_checkpoint(const std::string& path) {
  torch::serialize::InputArchive ar;
  const std::string bytes = open_checkpoint(path, ar);
  CheckpointContents c;
  c.step = read_step(ar, path);
  c.config = saved_config(ar);
  for (const std::string& key : ar.keys()) {
    if (key.rfind("text.", 0) == 0) {
      const c10::IValue v = entry(ar, path, key);
      if (v.isString()) c.texts[key.substr(5)] = v.toStringRef();
    } else if (key.rfind("tensor.", 0) == 0) {
      torch::Tensor t;
      if (ar.try_read(key, t)) c.tensors[key.substr(7)] = t;
    }
  }
  return c;
}

}  // namespace qfleet::train
