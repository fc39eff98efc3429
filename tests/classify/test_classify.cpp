// qfleet-classify (apps/classify): the IDX reader against files written byte by byte
// here, every bad-input error, the circuit against its analytic value, and short
// training runs (learning, resume, the feature cache, the timing breakdown).
#include <gtest/gtest.h>

#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "classify.hpp"
#include "data.hpp"
#include "features.hpp"
#include "idx.hpp"
#include "model.hpp"
#include "../apps_common/settings_checks.hpp"

namespace fs = std::filesystem;
using namespace qfleet::classify;

namespace {

fs::path temp_dir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("qfleet_classify_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

// An IDX file byte by byte (big-endian header), independent of write_idx.
std::vector<uint8_t> idx_bytes(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data, uint8_t type = 0x08) {
  std::vector<uint8_t> b = {0, 0, type, uint8_t(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) b.push_back(uint8_t((d >> s) & 0xff));
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

void write_bytes(const fs::path& p, const std::vector<uint8_t>& b) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

void write_gz(const fs::path& p, const std::vector<uint8_t>& b) {
  gzFile f = gzopen(p.string().c_str(), "wb");
  gzwrite(f, b.data(), unsigned(b.size()));
  gzclose(f);
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

// A two-class image set a CNN separates easily: class 0 bright on the top half, class 1
// on the bottom half, with noise; n per split.
void write_halves(const fs::path& dir, int64_t n_train, int64_t n_test, int64_t size = 12, uint8_t label_offset = 0) {
  fs::create_directories(dir);
  auto make = [&](int64_t n, uint64_t seed, const std::string& name) {
    auto g = at::make_generator<at::CPUGeneratorImpl>(seed);
    torch::Tensor labels = torch::randint(0, 2, {n}, g, torch::kInt64);
    torch::Tensor img = torch::rand({n, size, size}, g) * 90;
    torch::Tensor top = (labels == 0).view({n, 1, 1}).to(torch::kFloat32);
    img.narrow(1, 0, size / 2) += top * 150;
    img.narrow(1, size / 2, size / 2) += (1 - top) * 150;
    write_idx((dir / (name + "-images-idx3-ubyte.gz")).string(), img.to(torch::kUInt8));
    write_idx((dir / (name + "-labels-idx1-ubyte")).string(), (labels + label_offset).to(torch::kUInt8));
  };
  make(n_train, 7, "train");
  make(n_test, 8, "t10k");
}

Config tiny_config(const fs::path& data, const fs::path& out) {
  Config c;
  c.data = data.string();
  c.out = out.string();
  c.epochs = 4;
  c.batch = 16;
  c.lr = 0.01;
  c.threads = 2;
  c.progress = false;
  return c;
}

}  // namespace

TEST(Idx, ReadsFilesWrittenByteByByte) {
  const fs::path d = temp_dir("idx");
  std::vector<uint8_t> pixels(2 * 3 * 4);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = uint8_t(i * 7);
  write_bytes(d / "plain", idx_bytes({2, 3, 4}, pixels));
  write_gz(d / "zipped.gz", idx_bytes({2, 3, 4}, pixels));
  for (const char* name : {"plain", "zipped.gz"}) {
    const torch::Tensor t = read_idx((d / name).string(), 3);
    ASSERT_EQ(t.sizes(), (std::vector<int64_t>{2, 3, 4}));
    EXPECT_EQ(t[1][2][3].item<uint8_t>(), pixels[23]);
    EXPECT_EQ(t[0][1][0].item<uint8_t>(), pixels[4]);
  }
  // write_idx gives back the same bytes as the hand-written file.
  write_idx((d / "ours").string(), read_idx((d / "plain").string(), 3));
  std::ifstream a(d / "ours", std::ios::binary), b(d / "plain", std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(a), {}), std::string(std::istreambuf_iterator<char>(b), {}));
}

TEST(Idx, EveryCorruptionIsAClearError) {
  const fs::path d = temp_dir("idx_bad");
  const std::vector<uint8_t> px(12, 1);
  auto err = [&](const std::vector<uint8_t>& bytes, int dims = 3) {
    write_bytes(d / "f", bytes);
    return error_of([&] { read_idx((d / "f").string(), dims); });
  };
  EXPECT_NE(error_of([&] { read_idx((d / "missing").string(), 3); }).find("no such file"), std::string::npos);
  EXPECT_NE(err({}).find("empty or shorter"), std::string::npos);
  auto magic = idx_bytes({1, 3, 4}, px);
  magic[0] = 1;
  EXPECT_NE(err(magic).find("not an IDX file"), std::string::npos);
  EXPECT_NE(err(idx_bytes({1, 3, 4}, px, 0x0D)).find("type code 0x0d"), std::string::npos);
  EXPECT_NE(err(idx_bytes({12}, px)).find("1 dimensions, expected 3"), std::string::npos);
  EXPECT_NE(err(idx_bytes({1, 3, 4}, px), 1).find("3 dimensions, expected 1 (a label file)"), std::string::npos);
  EXPECT_NE(err(idx_bytes({1, 0, 4}, {})).find("has size 0"), std::string::npos);
  EXPECT_NE(err(idx_bytes({2, 3, 4}, px)).find("cut short: 12 data bytes, the header declares 24"), std::string::npos);
  EXPECT_NE(err(idx_bytes({1, 3, 3}, px)).find("longer than its header declares"), std::string::npos);
  EXPECT_NE(err(idx_bytes({60000, 60000, 60000}, px)).find("more than 2^36"), std::string::npos);
  // A header claiming exactly 2^36 bytes over 12 of data: the memory follows the data, and
  // the error says what is there, not an allocator's failure.
  EXPECT_NE(err(idx_bytes({4096, 4096, 4096}, px)).find("cut short: 12 data bytes, the header declares 68719476736"),
            std::string::npos);
  auto cut_header = idx_bytes({1, 3, 4}, px);
  cut_header.resize(9);
  EXPECT_NE(err(cut_header).find("header is cut short"), std::string::npos);
  // A gzip stream cut in the middle, and one whose compressed bytes were damaged.
  write_gz(d / "g.gz", idx_bytes({100, 10, 10}, std::vector<uint8_t>(10000, 3)));
  std::ifstream in(d / "g.gz", std::ios::binary);
  std::vector<uint8_t> gz((std::istreambuf_iterator<char>(in)), {});
  std::vector<uint8_t> cut(gz.begin(), gz.begin() + std::ptrdiff_t(gz.size() / 2));
  EXPECT_NE(err(cut).find(": "), std::string::npos);
  EXPECT_EQ(err(cut).find("(no error)"), std::string::npos);
  std::vector<uint8_t> damaged = gz;
  for (std::size_t i = 12; i < damaged.size() - 8; ++i) damaged[i] ^= 0x5a;
  EXPECT_EQ(err(damaged).find("(no error)"), std::string::npos);
}

TEST(Data, SplitsAreCheckedAsAWhole) {
  const fs::path d = temp_dir("data");
  write_halves(d, 40, 20);
  const DataSet ok = load_data(d.string());
  EXPECT_EQ(ok.train.images.size(0), 40);
  EXPECT_EQ(ok.height, 12);
  EXPECT_EQ(ok.checksum.size(), 16u);
  // a label out of range: named with its index
  write_halves(d, 40, 20, 12, /*label_offset=*/9);
  EXPECT_NE(error_of([&] { load_data(d.string()); }).find("label 10 at index"), std::string::npos);
  // counts that differ
  write_halves(d, 40, 20);
  write_idx((d / "t10k-labels-idx1-ubyte").string(), torch::zeros({19}, torch::kUInt8));
  EXPECT_NE(error_of([&] { load_data(d.string()); }).find("has 20 images but"), std::string::npos);
  // image sizes that differ between the splits; images too small for the backbones
  write_halves(d, 40, 20);
  write_idx((d / "t10k-images-idx3-ubyte.gz").string(), torch::zeros({20, 10, 12}, torch::kUInt8));
  EXPECT_NE(error_of([&] { load_data(d.string()); }).find("images of 10x12, but"), std::string::npos);
  write_halves(d, 40, 20, 6);
  EXPECT_NE(error_of([&] { load_data(d.string()); }).find("smaller than the backbones take"), std::string::npos);
  // a folder without the files says which file and how to get Fashion-MNIST
  EXPECT_NE(error_of([&] { load_data((d / "nothing").string()); }).find("train-images-idx3-ubyte[.gz]: no such file"),
            std::string::npos);
}

TEST(Model, WithoutEntanglingLayersTheCircuitIsCosines) {
  // AngleEmbedding(RX(a)) on |0>: <Z> = cos(a), analytically.
  ModelOptions o;
  o.layers = 0;
  HybridNet net(o);
  const torch::Tensor a = torch::rand({5, 4}) * 3 - 1.5;
  EXPECT_TRUE(torch::allclose(net->middle(a), torch::cos(a), 1e-6, 1e-6));
  o.embedding = "z";  // RZ on |0> leaves <Z> = 1
  HybridNet z(o);
  EXPECT_TRUE(torch::allclose(z->middle(a), torch::ones_like(a), 1e-6, 1e-6));
  o.embedding = "x";
  o.measure = "probs";  // product state: P(0000) = prod cos^2(a_i / 2)
  HybridNet p(o);
  const torch::Tensor probs = p->middle(a);
  ASSERT_EQ(probs.size(1), 16);
  EXPECT_TRUE(torch::allclose(probs.select(1, 0), torch::cos(a / 2).pow(2).prod(1), 1e-6, 1e-6));
}

TEST(Model, BadShapesAndNamesAreErrors) {
  ModelOptions o;
  o.head_inputs = 8;
  EXPECT_NE(error_of([&] { HybridNet n(o); }).find("gives 4 outputs, but head_inputs = 8"), std::string::npos);
  o.head_inputs = 0;
  o.circuit_json = R"({"kind": "circuit", "qubits": 2, "ops": [{"gate": "RX", "wires": [0], "params": [{"input": 0}]},
                       {"gate": "RY", "wires": [1], "params": [{"input": 1}]}], "observables": [[[1, "Z0"]]]})";
  EXPECT_NE(error_of([&] { HybridNet n(o); }).find("the circuit reads 2 inputs, but qubits = 4"), std::string::npos);
  o.circuit_json.clear();
  const std::vector<std::tuple<std::function<void(ModelOptions&)>, std::string>> bad = {
      {[](ModelOptions& m) { m.backbone = "vgg"; }, "small or resnet18"},
      {[](ModelOptions& m) { m.layer = "both"; }, "quantum or classical"},
      {[](ModelOptions& m) { m.embedding.assign(1, 'w'); }, "x, y or z"},
      {[](ModelOptions& m) { m.entangler = "ring"; }, "strong or basic"},
      {[](ModelOptions& m) { m.measure.assign(1, 'x'); }, "z or probs"},
      {[](ModelOptions& m) { m.qubits = 0; }, "qubits = 0"},
      {[](ModelOptions& m) { m.precision = "half"; }, "precision \"half\": \"complex64\" or \"complex128\""}};
  for (const auto& [edit, needle] : bad) {
    ModelOptions b = o;
    edit(b);
    EXPECT_NE(error_of([&] { HybridNet n(b); }).find(needle), std::string::npos) << needle;
  }
  EXPECT_EQ(ResNet18()->forward(torch::rand({2, 1, 28, 28})).sizes(), (std::vector<int64_t>{2, 512}));
}

TEST(Train, LearnsResumesAndTimesItsParts) {
  const fs::path d = temp_dir("train");
  write_halves(d / "data", 192, 64);
  Config c = tiny_config(d / "data", d / "full");
  const auto full = run(c);
  EXPECT_GT(full["test_accuracy"].get<double>(), 0.9);  // chance is 0.5
  EXPECT_EQ(full["epochs"].size(), 4u);
  EXPECT_EQ(full["confusion"].size(), 10u);  // the head has 10 classes; this data uses two
  int64_t counted = 0;
  for (const auto& row : full["confusion"])
    for (const auto& v : row) counted += v.get<int64_t>();
  EXPECT_EQ(counted, 64);
  const auto& t = full["timing"];
  EXPECT_EQ(t["timed_steps"].get<int64_t>(), 48);  // 4 epochs x 12 batches
  double parts = 0;
  for (const auto& [k, v] : t["ms"].items()) {
    EXPECT_GE(v.get<double>(), 0) << k;
    if (k != "quantum_backward") parts += v.get<double>();
  }
  EXPECT_NEAR(parts, t["step_ms"].get<double>(), 1e-9);
  EXPECT_LE(t["ms"]["quantum_backward"].get<double>(), t["ms"]["backward"].get<double>());
  EXPECT_GT(t["ms"]["quantum_backward"].get<double>(), 0);

  // Two epochs, then --resume --epochs 4: the same numbers as the uninterrupted run.
  Config first = tiny_config(d / "data", d / "resumed");
  first.epochs = 2;
  run(first);
  Config rest = tiny_config(d / "data", d / "resumed");
  rest.resume = true;
  const auto resumed = run(rest);
  EXPECT_EQ(resumed["resumed_from_step"].get<int64_t>(), 24);
  EXPECT_EQ(resumed["epochs"].size(), 4u);
  EXPECT_EQ(resumed["test_loss"].get<double>(), full["test_loss"].get<double>());
  EXPECT_EQ(resumed["epochs"][3]["train_loss"].get<double>(), full["epochs"][3]["train_loss"].get<double>());
  // Another configuration (here the learning rate) is refused, naming the checkpoint.
  Config other = rest;
  other.lr = 0.02;
  EXPECT_NE(error_of([&] { run(other); }).find("checkpoint.pt"), std::string::npos);
  Config none = tiny_config(d / "data", d / "never");
  none.resume = true;
  EXPECT_NE(error_of([&] { run(none); }).find("checkpoint.pt"), std::string::npos);
  EXPECT_EQ(full["resumed_from_step"].get<int64_t>(), 0);
}

TEST(Train, FeaturesModeCachesAndChecksItsFile) {
  const fs::path d = temp_dir("features");
  write_halves(d / "data", 128, 64);
  Config e2e = tiny_config(d / "data", d / "e2e");
  run(e2e);
  Config c = tiny_config(d / "data", d / "feat");
  c.mode = "features";
  c.backbone_from = (d / "e2e" / "backbone.pt").string();
  const auto first = run(c);
  EXPECT_FALSE(first["features"]["hit"].get<bool>());
  EXPECT_GT(first["test_accuracy"].get<double>(), 0.9);
  // The backbone stayed frozen: its saved weights are the ones it was given.
  ModelOptions mo;
  HybridNet given(mo), kept(mo);
  load_backbone(given->backbone_module(), c.backbone_from);
  load_backbone(kept->backbone_module(), (d / "feat" / "backbone.pt").string());
  for (const auto& p : given->backbone_module().named_parameters())
    EXPECT_TRUE(torch::equal(p.value(), kept->backbone_module().named_parameters()[p.key()])) << p.key();
  const auto second = run(c);  // the cached features, same results
  EXPECT_TRUE(second["features"]["hit"].get<bool>());
  EXPECT_EQ(second["test_loss"].get<double>(), first["test_loss"].get<double>());
  // A damaged cache file is recomputed (and said so), not used.
  const std::string path = first["features"]["cache"];
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(fs::file_size(path) / 2));
    f.put('\x7f').put('\x01').put('\x02');
  }
  const auto third = run(c);
  EXPECT_FALSE(third["features"]["hit"].get<bool>());
  EXPECT_NE(third["features"]["note"].get<std::string>().find("recomputed"), std::string::npos);
  EXPECT_EQ(third["test_loss"].get<double>(), first["test_loss"].get<double>());
  // A backbone file of another architecture is refused by name.
  Config wrong = c;
  wrong.model.backbone = "resnet18";
  const std::string why = error_of([&] { run(wrong); });
  EXPECT_NE(why.find(c.backbone_from + ": module 'backbone'"), std::string::npos) << why;  // (a tensor it lacks, or of another shape)
}

// config.json and Config agree: every key is bound to a field (and every field read from a
// key), and the struct's defaults are the schema's, so a run from C++ and a bare command-line
// run use the same settings.
TEST(Settings, EveryKeyIsBoundAndTheDefaultsAreTheSchemas) {
  settings_checks::expect_bound(qfleet::classify::settings(), qfleet::classify::schema());
  // (and the check sees a difference where there is one)
  std::vector<qfleet::app::Setting<Config>> off = qfleet::classify::settings();
  off[0].get = [](const Config&) { return nlohmann::json("/elsewhere"); };
  EXPECT_NE(qfleet::app::defaults_disagree(off, qfleet::classify::schema()).find("data"), std::string::npos);
}

TEST(Train, TheAblationAndBadSettings) {
  const fs::path d = temp_dir("ablation");
  write_halves(d / "data", 96, 32);
  Config c = tiny_config(d / "data", d / "out");
  c.model.layer = "classical";
  const auto r = run(c);
  EXPECT_EQ(r["model"]["parameters"]["middle"].get<int64_t>(), 4 * 4 + 4);
  EXPECT_GT(r["test_accuracy"].get<double>(), 0.9);
  for (const auto& [edit, needle] : std::vector<std::pair<std::function<void(Config&)>, std::string>>{
           {[](Config& x) { x.epochs = 0; }, "key 'epochs': expected an integer in [1, 10000], got 0"},
           {[](Config& x) { x.batch = 0; }, "key 'batch': expected an integer in [1, 65536], got 0"},
           {[](Config& x) { x.lr = std::nan(""); }, "key 'lr'"},
           {[](Config& x) { x.lr = 0; }, "lr = 0.000000: in (0, 10)"},
           {[](Config& x) { x.mode = "fast"; }, "key 'mode': expected one of [\"end_to_end\",\"features\"]"},
           {[](Config& x) { x.device = "tpu"; }, "key 'device': expected one of [\"cpu\",\"cuda\",\"automatic\"]"},
           {[](Config& x) { x.backbone_from = "b.pt"; }, "backbone_from is for mode = features"},
           {[](Config& x) { x.circuit_file = "/nonexistent.json"; }, "the circuit file: cannot open /nonexistent.json"}}) {
    Config b = c;
    edit(b);
    EXPECT_NE(error_of([&] { run(b); }).find(needle), std::string::npos) << needle;
  }
  // Images that are all one value: a data error naming the folder, not a NaN deep in the engine.
  const fs::path flat = d / "flat";
  fs::create_directories(flat);
  for (const char* split : {"train", "t10k"}) {
    write_idx((flat / (std::string(split) + "-images-idx3-ubyte")).string(), torch::full({20, 12, 12}, 7, torch::kUInt8));
    write_idx((flat / (std::string(split) + "-labels-idx1-ubyte")).string(),
              torch::arange(20, torch::kInt64).remainder(2).to(torch::kUInt8));
  }
  Config f = c;
  f.data = flat.string();
  EXPECT_NE(error_of([&] { run(f); }).find(flat.string() + ": the 20 training images are all one value"), std::string::npos)
      << error_of([&] { run(f); });
}
