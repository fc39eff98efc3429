// libFuzzer target for the training checkpoint reader (qfleet::train::read_checkpoint and
// load_checkpoint, adapters/torch/src/train/checkpoint.cpp): any bytes give the
// checkpoint's contents or one CheckpointError naming the file, never another exception, a
// crash or a sanitizer report. An input whose first byte is 'S' is sealed first, as
// save_checkpoint seals a checkpoint's content (the content's bytes beside their SHA-1), so
// the reader of the content itself is reached: a mutated checkpoint otherwise stops at the
// digest. The seeds are made here, at start-up, in the corpus folder: a checkpoint of a
// small model with its optimizer, a tensor and a text, and its content sealed ('S').
#include <unistd.h>

#include <c10/util/hash.h>
#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "qfleet/train.hpp"

namespace {

namespace train = qfleet::train;

const std::string& scratch() {
  static const std::string path = "/tmp/qfleet_fuzz_checkpoint_" + std::to_string(::getpid()) + ".pt";
  return path;
}

void write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The run a checkpoint is restored into: a small network, its optimizer, a tensor, a text.
struct Run {
  torch::nn::Linear net{2, 3};
  torch::optim::Adam adam{net->parameters(), torch::optim::AdamOptions(0.01)};
  torch::Tensor weights = torch::zeros({4}, torch::kFloat64);
  std::string history = "[]";
  train::TrainState state;
  Run() {
    state.config = R"({"seed": 1})";
    state.modules = {{"model", net.ptr().get()}};
    state.optimizers = {{"adam", &adam}};
    state.tensors = {{"weights", weights}};
    state.texts = {{"history", &history}};
  }
};

std::string sealed(const std::string& content) {
  torch::serialize::OutputArchive ar;
  ar.write("qfleet.format", c10::IValue(std::string("qfleet-train-checkpoint/2")));
  ar.write("qfleet.sha1", c10::IValue(c10::sha1(content).str()));
  ar.write("qfleet.content",
           torch::from_blob(const_cast<char*>(content.data()), {int64_t(content.size())}, torch::kUInt8).clone());
  std::ostringstream os;
  ar.save_to(os);
  return os.str();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  // The seeds, into the first folder named on the command line (the corpus).
  for (int i = 1; i < *argc; ++i) {
    const std::string dir = (*argv)[i];
    if (dir.empty() || dir[0] == '-' || !std::filesystem::is_directory(dir)) continue;
    Run run;
    run.state.step = 3;
    run.history = R"([{"epoch": 1, "loss": 0.5}])";
    const std::string file = dir + "/seed-checkpoint.pt";
    train::save_checkpoint(file, run.state);
    torch::serialize::InputArchive ar;
    ar.load_from(file);
    torch::Tensor content;
    ar.read("qfleet.content", content);
    write(dir + "/seed-content", "S" + std::string(reinterpret_cast<const char*>(content.data_ptr<uint8_t>()),
                                                   std::size_t(content.numel())));
    break;
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (!bytes.empty() && bytes[0] == 'S') bytes = sealed(bytes.substr(1));
  write(scratch(), bytes);
  try {
    const train::CheckpointContents c = train::read_checkpoint(scratch());
    if (c.step < 0) __builtin_trap();
  } catch (const train::CheckpointError&) {
  }
  Run run;
  try {
    train::load_checkpoint(scratch(), run.state);
  } catch (const train::CheckpointError&) {
  }
  return 0;
}
