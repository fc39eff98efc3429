// libFuzzer target for the training checkpoint reader (qfleet::train::read_checkpoint and
// load_checkpoint, adapters/torch/src/train/checkpoint.cpp): any bytes give the
// checkpoint's contents or one CheckpointError naming the file, never another exception, a
// crash or a sanitizer report. An input whose first byte is 'S' has its digest recomputed
// first (the tensor file's SHA-1 of the whole file, qfleet/tensor_file.hpp), so the header's
// entries and the archives rebuilt from them are reached: a mutated checkpoint otherwise
// stops at the digest. The seeds are made here, at start-up, in the corpus folder: a
// checkpoint of a small model with its optimizer, a tensor and a text, as it is and with 'S'.
#include <unistd.h>

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "../torch/reseal.hpp"
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
    write(dir + "/seed-sealed", "S" + read(file));
    break;
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (!bytes.empty() && bytes[0] == 'S') bytes = qfleet_test::reseal(bytes.substr(1));
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
