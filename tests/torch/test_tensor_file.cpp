// qfleet's tensor files (qfleet/tensor_file.hpp): what is written comes back bit for bit,
// archives of a model and its optimizer restore a run's state, and every file that is not
// one the writer made (damaged, cut short, a LibTorch archive, a header with a recomputed
// digest but hostile entries) is one TensorFileError naming it, with nothing decoded.
// References: the tensors written (torch::equal), an optimizer never saved (its next step).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "qfleet/tensor_file.hpp"
#include "reseal.hpp"

namespace {

namespace tr = qfleet::train;

tr::TensorFile every_dtype() {
  tr::TensorFile f;
  f.format = "qfleet-test/1";
  const auto base = torch::arange(-6, 6, torch::kFloat64).view({3, 4});
  for (const auto t : {torch::kFloat64, torch::kFloat32, torch::kFloat16, torch::kBFloat16, torch::kInt64, torch::kInt32,
                       torch::kInt16, torch::kInt8, torch::kUInt8, torch::kBool})
    f.tensors[std::string("a_") + c10::toString(t)] = base.to(t);
  f.tensors["complex128"] = torch::complex(base, -base * 0.5);
  f.tensors["complex64"] = torch::complex(base, base).to(torch::kComplexFloat).t();  // not contiguous
  f.tensors["scalar"] = torch::tensor(3.25);
  f.tensors["empty"] = torch::zeros({0, 3}, torch::kInt64);
  f.tensors["nan"] = torch::tensor({std::nan(""), std::numeric_limits<double>::infinity(), -0.0});
  f.texts["history"] = R"([{"epoch": 1}])";
  f.texts["unicode"] = "Δt = 0.5 µs";
  return f;
}

// A file whose header is `header` (then `data`), sealed.
std::string crafted(const std::string& header, const std::string& data) {
  std::string h = R"({"__metadata__":{"qfleet.sha1":")" + std::string(40, '0') + R"(","qfleet.format":"qfleet-test/1")" + header;
  std::string out(8, '\0');
  const std::uint64_t n = h.size();
  std::memcpy(out.data(), &n, 8);
  return qfleet_test::reseal(out + h + data);
}

void expect_refused(const std::string& bytes, const std::string& part) {
  try {
    tr::decode_tensor_file(bytes, "f.pt", "");
    ADD_FAILURE() << "accepted; expected: " << part;
  } catch (const tr::TensorFileError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("f.pt: ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(TensorFile, EveryDtypeAndTextComesBackBitForBit) {
  const tr::TensorFile f = every_dtype();
  const tr::TensorFile back = tr::decode_tensor_file(tr::encode_tensor_file(f), "f.pt", "qfleet-test/1");
  EXPECT_EQ(back.format, f.format);
  EXPECT_EQ(back.texts, f.texts);
  ASSERT_EQ(back.tensors.size(), f.tensors.size());
  for (const auto& [name, t] : f.tensors) {
    const torch::Tensor& b = back.tensors.at(name);
    EXPECT_EQ(b.scalar_type(), t.scalar_type()) << name;
    EXPECT_EQ(b.sizes(), t.sizes()) << name;
    const auto bits = [](const torch::Tensor& x) {
      const auto c = x.contiguous();
      return std::string(static_cast<const char*>(c.data_ptr()), std::size_t(c.nbytes()));
    };
    EXPECT_EQ(bits(b), bits(t)) << name;  // NaN and -0.0 too
  }
  EXPECT_THROW(tr::decode_tensor_file(tr::encode_tensor_file(f), "f.pt", "qfleet-other/1"), tr::TensorFileError);
}

TEST(TensorFile, AModelAndItsOptimizerRestoreTheRun) {
  torch::manual_seed(3);
  torch::nn::Sequential net(torch::nn::Linear(3, 4), torch::nn::BatchNorm1d(4), torch::nn::Linear(4, 1));
  torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(0.01).betas({0.8, 0.95}));
  const auto x = torch::randn({8, 3});
  auto step = [&](torch::nn::Sequential& n, torch::optim::Optimizer& o) {
    o.zero_grad();
    n->forward(x).square().mean().backward();
    o.step();
  };
  step(net, adam);
  tr::TensorFile f;
  f.format = "qfleet-test/1";
  tr::put_module(f, "net", *net);
  torch::serialize::OutputArchive oa;
  adam.save(oa);
  tr::put_archive(f, "adam", oa);
  const tr::TensorFile back = tr::decode_tensor_file(tr::encode_tensor_file(f), "f.pt", "");

  torch::manual_seed(4);  // other weights, an optimizer with no state
  torch::nn::Sequential other(torch::nn::Linear(3, 4), torch::nn::BatchNorm1d(4), torch::nn::Linear(4, 1));
  torch::optim::Adam other_adam(other->parameters(), torch::optim::AdamOptions(0.5));
  tr::get_module(back, "net", *other, "f.pt");
  torch::serialize::InputArchive ia;
  ASSERT_TRUE(tr::get_archive(back, "adam", ia, "f.pt"));
  other_adam.load(ia);
  step(net, adam);  // the reference: the run that was never saved
  step(other, other_adam);
  for (std::size_t i = 0; i < net->parameters().size(); ++i)
    EXPECT_TRUE(torch::equal(net->parameters()[i], other->parameters()[i])) << i;
  for (std::size_t i = 0; i < net->buffers().size(); ++i) EXPECT_TRUE(torch::equal(net->buffers()[i], other->buffers()[i])) << i;

  torch::nn::Sequential wider(torch::nn::Linear(3, 5), torch::nn::BatchNorm1d(5), torch::nn::Linear(5, 1));
  const auto before = wider->parameters()[0].clone();
  try {
    tr::get_module(back, "net", *wider, "f.pt");
    ADD_FAILURE() << "another architecture was loaded";
  } catch (const tr::TensorFileError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor '0.weight' is [4, 3] Float in the file, [5, 3] Float in this model"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(torch::equal(wider->parameters()[0], before));
}

TEST(TensorFile, DamageAnywhereAndEveryCutAreRefused) {
  const std::string bytes = tr::encode_tensor_file(every_dtype());
  for (std::size_t at = 0; at < bytes.size(); at += 7) {
    std::string damaged = bytes;
    damaged[at] = char(damaged[at] ^ 0x20);
    EXPECT_THROW(tr::decode_tensor_file(damaged, "f.pt", ""), tr::TensorFileError) << "a flip at " << at;
  }
  for (std::size_t n = 0; n < bytes.size(); n += 5)
    EXPECT_THROW(tr::decode_tensor_file(bytes.substr(0, n), "f.pt", ""), tr::TensorFileError) << "cut at " << n;
  std::string flipped = bytes;
  flipped[bytes.size() - 3] = char(flipped[bytes.size() - 3] ^ 1);
  expect_refused(flipped, "is damaged: its SHA-1 is ");
  expect_refused("not a tensor file", "is not a qfleet tensor file");
}

TEST(TensorFile, ALibTorchArchiveIsRefusedUnread) {
  // (tests/python/test_files_run_no_code.py plants one whose __setstate__ runs code where the apps read.)
  torch::serialize::OutputArchive a;
  a.write("x", torch::ones({2}));
  std::ostringstream os;
  a.save_to(os);
  expect_refused(os.str(), "is a LibTorch archive (a zip), which qfleet does not read: loading one can run code");
}

TEST(TensorFile, HostileEntriesWithAValidDigestAreRefused) {
  const std::string eight(8, '\0');
  expect_refused(crafted(R"(},"t":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}})", eight), "does not fit the file");
  expect_refused(crafted(R"(},"t":{"dtype":"F64","shape":[-1],"data_offsets":[0,8]}})", eight), "does not fit the file");
  expect_refused(crafted(R"(},"t":{"dtype":"F64","shape":[4294967296,4294967296,8],"data_offsets":[0,8]}})", eight),
                 "does not fit the file");
  expect_refused(crafted(R"(},"t":{"dtype":"F64","shape":[1],"data_offsets":[8,0]}})", eight), "does not fit the file");
  expect_refused(crafted(R"(},"t":{"dtype":"X9","shape":[1],"data_offsets":[0,8]}})", eight), "unknown dtype");
  expect_refused(crafted(R"(},"t":{"dtype":"BOOL","shape":[1],"data_offsets":[0,1]}})", "\x02"), "neither 0 nor 1");
  expect_refused(crafted(R"(},"t":{"dtype":"F64"}})", eight), "lacks its dtype, shape or data_offsets");
  expect_refused(crafted(R"(,"qfleet.complex":"[\"t\"]"},"t":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", eight),
                 "complex tensor 't' is not stored as [..., 2] real pairs");
  expect_refused(crafted(R"(} [)", ""), "not a JSON object");
  expect_refused(crafted(R"(},"qfleet-test":2})", ""), "lacks its dtype");

  // An archive's entry names become TorchScript attribute names when LibTorch rebuilds it:
  // one that could end a string and start code is refused before anything is built.
  const std::string evil = "x\"] = int\n    def __setstate__(self, s: int):\n        print(1)\n#";
  const auto archive = [](const nlohmann::json& tree) {
    return ",\"archive.m\":" + nlohmann::json(tree.dump()).dump() + "}}";
  };
  const tr::TensorFile f = tr::decode_tensor_file(crafted(archive({{evil, {{"int", 1}}}}), ""), "f.pt", "");
  torch::serialize::InputArchive ia;
  try {
    tr::get_archive(f, "m", ia, "f.pt");
    ADD_FAILURE() << "an entry named like code was rebuilt";
  } catch (const tr::TensorFileError& e) {
    EXPECT_NE(std::string(e.what()).find("has a name a tensor file does not hold"), std::string::npos) << e.what();
  }
  std::string deep = R"({"int": 1})";  // tuples nested 1,000 deep: refused at 32 levels
  for (int i = 0; i < 1000; ++i) deep = R"({"tuple": [)" + deep + "]}";
  for (const std::string& text : {std::string("7"), std::string(R"({"a": {"tensor": "none"}})"),
                                  std::string(R"({"a": {"list": [{"int": 1}], "of": "float"}})"),
                                  std::string(R"({"a": {"what": 1}})"), R"({"a": )" + deep + "}"}) {
    const nlohmann::json tree = nlohmann::json::parse(text);
    const tr::TensorFile g = tr::decode_tensor_file(crafted(archive(tree), ""), "f.pt", "");
    torch::serialize::InputArchive a;
    EXPECT_THROW(tr::get_archive(g, "m", a, "f.pt"), tr::TensorFileError) << text.substr(0, 80);
  }
}

TEST(TensorFile, ReadsOnlyRegularFilesAndWritesAtomically) {
  const auto dir = std::filesystem::temp_directory_path() / ("qfleet_tensor_file_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "f.pt").string();
  tr::write_tensor_file(path, every_dtype());
  EXPECT_EQ(tr::read_tensor_file(path, "qfleet-test/1").texts.at("unicode"), "Δt = 0.5 µs");
  for (const std::string& p : {std::string("/dev/zero"), dir.string(), (dir / "absent.pt").string()})
    EXPECT_THROW(tr::read_tensor_file(p, ""), tr::TensorFileError) << p;
  std::filesystem::remove_all(dir);
}

}  // namespace
