// qfleet::train's checkpoints, mixed-precision rule, loss scaler and device/batch
// choice, on the CPU. References: an uninterrupted run (resume), plain arithmetic
// (the scaler's step against SGD by hand), the layer called without autocast.
#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <c10/core/CPUAllocator.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "classifier.hpp"
#include "qfleet/torch.hpp"
#include "qfleet/tensor_file.hpp"
#include "qfleet/train.hpp"
#include "qfleet/version.hpp"

namespace {

namespace fs = std::filesystem;
namespace tr = qfleet::train;

fs::path temp_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("qfleet_train_state_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// A small hybrid model: a linear layer, dropout (it draws from the default CPU
// generator), a circuit layer, a linear read-out.
struct Hybrid : torch::nn::Module {
  explicit Hybrid(uint64_t seed)
      : pre(register_module("pre", torch::nn::Linear(3, 3))),
        drop(register_module("drop", torch::nn::Dropout(0.2))),
        q(register_module("q", qfleet::nn::QuantumLayer(classifier(3, 2), qfleet::nn::QuantumLayerOptions{qfleet::Precision::complex128, 1, seed}))),
        post(register_module("post", torch::nn::Linear(3, 1))) {
    to(torch::kFloat64);
  }
  torch::Tensor forward(const torch::Tensor& x) { return post(q(drop(pre(x)))).squeeze(1); }
  torch::nn::Linear pre;
  torch::nn::Dropout drop;
  qfleet::nn::QuantumLayer q;
  torch::nn::Linear post;
};

struct HybridRun {
  explicit HybridRun(uint64_t seed) : model(seed), opt(model.parameters(), torch::optim::AdamOptions(0.05)),
                                data(at::make_generator<at::CPUGeneratorImpl>(seed + 100)) {}
  void step() {
    const auto x = torch::randn({8, 3}, data, torch::kFloat64);
    const auto y = x.sum(1).sin();
    opt.zero_grad();
    torch::mse_loss(model.forward(x), y).backward();
    opt.step();
  }
  tr::TrainState state(int64_t step) {
    tr::TrainState s;
    s.step = step;
    s.config = "{\"lr\": 0.05}";
    s.modules = {{"model", &model}};
    s.optimizers = {{"adam", &opt}};
    s.generators = {{"data", data}};
    return s;
  }
  Hybrid model;
  torch::optim::Adam opt;
  at::Generator data;
};

TEST(TrainCheckpoint, ResumeIsBitIdenticalToAnUninterruptedRun) {
  const fs::path dir = temp_dir("resume");
  torch::manual_seed(7);
  HybridRun whole(1);
  for (int i = 0; i < 12; ++i) whole.step();

  torch::manual_seed(7);
  HybridRun first(1);
  for (int i = 0; i < 5; ++i) first.step();
  tr::save_checkpoint((dir / "ck.pt").string(), first.state(5));
  for (int i = 0; i < 3; ++i) first.step();  // what a killed run did after the checkpoint is lost

  torch::manual_seed(12345);  // a new process: other seeds until the checkpoint is loaded
  HybridRun resumed(99);
  auto st = resumed.state(0);
  tr::load_checkpoint((dir / "ck.pt").string(), st);
  EXPECT_EQ(st.step, 5);
  for (int i = 5; i < 12; ++i) resumed.step();

  const auto a = whole.model.parameters(), b = resumed.model.parameters();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "parameter " << i;
  fs::remove_all(dir);
}

TEST(TrainCheckpoint, BadFilesAndOtherConfigurationsAreRefusedAndChangeNothing) {
  const fs::path dir = temp_dir("errors");
  HybridRun run(3);
  const std::string ck = (dir / "ck.pt").string();
  tr::save_checkpoint(ck, run.state(4));
  {  // (what wrote it: the version and the source tree's commit, or "unknown")
    const auto file = tr::read_tensor_file(ck, "");
    EXPECT_EQ(file.texts.at("version"), QFLEET_VERSION_STRING);
    const std::string commit = file.texts.at("commit");
    EXPECT_TRUE(commit == "unknown" || commit.substr(0, 40).find_first_not_of("0123456789abcdef") == std::string::npos)
        << commit;
  }
  auto expect_error = [&](const std::string& path, tr::TrainState st, const std::string& part) {
    try {
      tr::load_checkpoint(path, st);
      ADD_FAILURE() << "no error for " << part;
    } catch (const tr::CheckpointError& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expect_error((dir / "absent.pt").string(), run.state(0), "no checkpoint at");
  {
    std::ofstream(dir / "junk.pt") << "not a checkpoint";
  }
  expect_error((dir / "junk.pt").string(), run.state(0), "is not a qfleet tensor file");
  {
    std::ifstream in(ck, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(dir / "cut.pt", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  expect_error((dir / "cut.pt").string(), run.state(0), "is damaged");

  HybridRun other(4);
  const auto before = other.model.parameters()[0].clone();
  auto changed = other.state(0);
  changed.config = "{\"lr\": 0.1}";
  expect_error(ck, changed, "it differs in lr (checkpoint 0.05, now 0.1)");
  changed.config = "{\"lr\": 0.05, \"depth\": 2}";
  expect_error(ck, changed, "it differs in depth (checkpoint absent, now 2)");
  changed.config = "not json";  // texts that are not JSON objects: the hashes
  expect_error(ck, changed, "another configuration (hash ");
  try {
    tr::load_checkpoint(ck, changed);
  } catch (const tr::CheckpointConfigError&) {
  } catch (...) {
    ADD_FAILURE() << "another configuration is not a CheckpointConfigError";
  }
  auto extra = other.state(0);
  torch::Tensor buffer = torch::zeros({2});
  extra.tensors = {{"buffer", buffer}};
  expect_error(ck, extra, "no entry 'tensor.buffer'");
  EXPECT_TRUE(torch::equal(other.model.parameters()[0], before)) << "a refused checkpoint changed the model";
  fs::remove_all(dir);
}

TEST(TrainCheckpoint, FlippedBytesInsideATensorAreRefusedAndChangeNothing) {
  // Without the digest, bytes changed inside a saved tensor would resume a different run
  // silently (as PyTorch's archives, which check no data, did).
  const fs::path dir = temp_dir("flips");
  HybridRun run(3);
  const std::string ck = (dir / "ck.pt").string();
  tr::save_checkpoint(ck, run.state(4));
  std::ifstream in(ck, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The first parameter's raw bytes, where they lie in the file.
  const torch::Tensor w = run.model.parameters()[0].detach().contiguous();
  const std::string raw(static_cast<const char*>(w.data_ptr()), std::size_t(w.numel() * w.element_size()));
  const std::size_t at = bytes.find(raw);
  ASSERT_NE(at, std::string::npos) << "the parameter's bytes are not in the file";
  HybridRun other(4);
  const auto before = other.model.parameters()[0].clone();
  for (std::size_t offset : {std::size_t(0), raw.size() / 2, raw.size() - 8}) {
    std::string damaged = bytes;
    for (std::size_t i = 0; i < 8; ++i) damaged[at + offset + i] = char(damaged[at + offset + i] ^ 0x5a);
    std::ofstream(dir / "damaged.pt", std::ios::binary) << damaged;
    try {
      auto st = other.state(0);
      tr::load_checkpoint((dir / "damaged.pt").string(), st);
      ADD_FAILURE() << "flipped bytes at " << offset << " were accepted";
    } catch (const tr::CheckpointError& e) {
      EXPECT_NE(std::string(e.what()).find("is damaged: its SHA-1"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(torch::equal(other.model.parameters()[0], before)) << "a refused checkpoint changed the model";
  auto st = other.state(0);
  tr::load_checkpoint(ck, st);  // the undamaged file loads
  EXPECT_TRUE(torch::equal(other.model.parameters()[0], run.model.parameters()[0]));
  fs::remove_all(dir);
}

TEST(TrainCheckpoint, TensorsRoundTripAndAWrongShapeIsNamed) {
  const fs::path dir = temp_dir("tensors");
  const std::string ck = (dir / "ck.pt").string();
  tr::TrainState s;
  torch::Tensor t = torch::arange(6, torch::kFloat64).view({2, 3});
  s.tensors = {{"t", t}};
  s.step = 9;
  tr::save_checkpoint(ck, s);
  torch::Tensor back = torch::zeros({2, 3}, torch::kFloat64);
  tr::TrainState r;
  r.tensors = {{"t", back}};
  tr::load_checkpoint(ck, r);
  EXPECT_TRUE(torch::equal(back, t));
  EXPECT_EQ(r.step, 9);
  torch::Tensor wrong = torch::zeros({3}, torch::kFloat64);
  r.tensors = {{"t", wrong}};
  EXPECT_THROW(tr::load_checkpoint(ck, r), tr::CheckpointError);
  fs::remove_all(dir);
}

TEST(TrainCheckpoint, TextsRoundTripAndTheContentsReadWithoutARun) {
  const fs::path dir = temp_dir("texts");
  const std::string ck = (dir / "ck.pt").string();
  std::string curve = "[{\"step\": 1, \"loss\": 0.5}]", note = "";  // an empty text is a text
  torch::Tensor theta = torch::arange(4, torch::kFloat64);
  tr::TrainState s;
  s.step = 3;
  s.config = "{\"lr\": 0.1}";
  s.tensors = {{"theta", theta}};
  s.texts = {{"curve", &curve}, {"note", &note}};
  tr::save_checkpoint(ck, s);

  std::string curve_back = "old", note_back = "old";
  torch::Tensor theta_back = torch::zeros({4}, torch::kFloat64);
  tr::TrainState r;
  r.config = s.config;
  r.tensors = {{"theta", theta_back}};
  r.texts = {{"curve", &curve_back}, {"note", &note_back}};
  tr::load_checkpoint(ck, r);
  EXPECT_EQ(curve_back, curve);
  EXPECT_EQ(note_back, "");
  EXPECT_TRUE(torch::equal(theta_back, theta));

  const tr::CheckpointContents c = tr::read_checkpoint(ck);
  EXPECT_EQ(c.step, 3);
  EXPECT_EQ(c.config, s.config);
  EXPECT_EQ(c.texts.size(), 2u);
  EXPECT_EQ(c.texts.at("curve"), curve);
  ASSERT_EQ(c.tensors.count("theta"), 1u);
  EXPECT_TRUE(torch::equal(c.tensors.at("theta"), theta));

  std::string absent;  // a text the file lacks: refused, the strings unchanged
  r.texts = {{"curve", &curve_back}, {"absent", &absent}};
  curve_back = "unchanged";
  EXPECT_THROW(tr::load_checkpoint(ck, r), tr::CheckpointError);
  EXPECT_EQ(curve_back, "unchanged");
  std::ofstream(dir / "junk.pt") << "not a checkpoint";
  EXPECT_THROW(tr::read_checkpoint((dir / "junk.pt").string()), tr::CheckpointError);
  fs::remove_all(dir);
}

TEST(TrainPrecision, ThePolicyFollowsTheDeviceAndComputeCapability) {
  const auto cpu = tr::precision_policy(torch::kCPU);
  EXPECT_FALSE(cpu.autocast);
  EXPECT_FALSE(cpu.grad_scaler);
  const auto hopper = tr::precision_policy(torch::Device(torch::kCUDA, 0), 9);
  EXPECT_TRUE(hopper.autocast);
  EXPECT_EQ(hopper.dtype, torch::kBFloat16);
  EXPECT_FALSE(hopper.grad_scaler);
  EXPECT_TRUE(hopper.tf32);
  const auto volta = tr::precision_policy(torch::Device(torch::kCUDA, 0), 7);
  EXPECT_EQ(volta.dtype, torch::kHalf);
  EXPECT_TRUE(volta.grad_scaler);
  EXPECT_FALSE(volta.tf32);
}

// The rule: autocast never downcasts the engine's inputs; bf16 inputs are cast up.
TEST(TrainPrecision, AutocastLeavesTheEngineInItsProgramsPrecision) {
  const auto c = classifier(3, 2);
  auto p128 = c10::make_intrusive<qfleet::nn::CircuitProgram>(c);
  auto p64 = c10::make_intrusive<qfleet::nn::CircuitProgram>(c, qfleet::CompileOptions{qfleet::Precision::complex64});
  const auto x = torch::rand({4, 3}, torch::kFloat64);
  const auto w = torch::rand({p128->n_weights()}, torch::kFloat64);
  const auto plain128 = qfleet::nn::circuit_forward(p128, x, w);
  const auto xb = x.to(torch::kBFloat16), wb = w.to(torch::kBFloat16);
  const auto plain64 = qfleet::nn::circuit_forward(p64, xb.to(torch::kFloat), wb.to(torch::kFloat));

  tr::PrecisionPolicy cpu_bf16;
  cpu_bf16.autocast = true;
  cpu_bf16.dtype = torch::kBFloat16;
  {
    tr::AutocastScope scope(cpu_bf16);
    torch::nn::Linear lin(3, 3);
    ASSERT_EQ(lin(x.to(torch::kFloat)).scalar_type(), torch::kBFloat16) << "autocast is not on";
    const auto y128 = qfleet::nn::circuit_forward(p128, x, w);
    EXPECT_EQ(y128.scalar_type(), torch::kFloat64);
    EXPECT_TRUE(torch::equal(y128, plain128));
    const auto y64 = qfleet::nn::circuit_forward(p64, xb, wb);
    EXPECT_EQ(y64.scalar_type(), torch::kFloat);
    EXPECT_TRUE(torch::equal(y64, plain64));
  }
  EXPECT_FALSE(at::autocast::is_autocast_enabled(torch::kCPU));
  // Without autocast a bf16 input is still an error, not a silent cast.
  EXPECT_THROW(qfleet::nn::circuit_forward(p64, xb, wb), c10::Error);
}

TEST(TrainPrecision, GradScalerStepsOnCleanGradientsAndBacksOffOnInf) {
  auto p = torch::tensor({1.0, -2.0}, torch::kFloat).requires_grad_();
  torch::optim::SGD sgd({p}, torch::optim::SGDOptions(0.1));
  tr::GradScaler scaler({.init_scale = 8.0, .growth_factor = 2.0, .backoff_factor = 0.5, .growth_interval = 2});
  auto loss_of = [&] { return (p * torch::tensor({3.0f, 5.0f})).sum(); };  // gradient (3, 5)
  sgd.zero_grad();
  scaler.scale(loss_of()).backward();
  EXPECT_FLOAT_EQ(p.grad()[0].item<float>(), 24.0f);
  EXPECT_EQ(scaler.scale(loss_of()).dim(), 0);  // the loss's shape is kept
  EXPECT_TRUE(scaler.step(sgd));
  scaler.update();
  EXPECT_FLOAT_EQ(p[0].item<float>(), 1.0f - 0.1f * 3.0f);
  EXPECT_FLOAT_EQ(p[1].item<float>(), -2.0f - 0.1f * 5.0f);
  EXPECT_DOUBLE_EQ(scaler.scale_value(), 8.0);
  sgd.zero_grad();
  scaler.scale(loss_of()).backward();
  EXPECT_TRUE(scaler.step(sgd));
  scaler.update();
  EXPECT_DOUBLE_EQ(scaler.scale_value(), 16.0);  // two clean steps: grown
  const auto before = p.detach().clone();
  sgd.zero_grad();
  scaler.scale(loss_of()).backward();
  p.mutable_grad()[1] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(scaler.step(sgd));
  scaler.update();
  EXPECT_TRUE(torch::equal(p.detach(), before));
  EXPECT_DOUBLE_EQ(scaler.scale_value(), 8.0);
}

TEST(TrainResources, BatchProbeOnAFakeMemoryBudget) {
  auto linear = [](int64_t b) { return std::size_t(1000 + 300 * b); };
  const auto c = tr::choose_batch(linear, 10000, 0.7, 65536);  // (7000 - 1000) / 300 = 20 -> 16
  EXPECT_EQ(c.batch, 16);
  EXPECT_EQ(c.fixed_bytes, 1000u);
  EXPECT_EQ(c.per_sample_bytes, 300u);
  EXPECT_EQ(tr::choose_batch(linear, 10000, 0.7, 8).batch, 8);
  EXPECT_EQ(tr::choose_batch([](int64_t) { return std::size_t(100); }, 10000, 0.7, 1024).batch, 1024);
  try {
    tr::choose_batch(linear, 1500, 0.7);
    ADD_FAILURE() << "no error when one sample does not fit";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("even one sample does not fit"), std::string::npos) << e.what();
  }
  EXPECT_THROW(tr::choose_batch(linear, 10000, 1.5), std::invalid_argument);
}

TEST(TrainResources, CpuPeakMemoryCountsTheStepsTensors) {
  const std::size_t mib = 1 << 20;
  const std::size_t peak = tr::peak_memory(torch::kCPU, [&] {
    auto a = torch::empty({int64_t(mib / 8)}, torch::kFloat64);
    auto b = torch::empty({int64_t(mib / 8)}, torch::kFloat64);
  });
  EXPECT_GE(peak, 2 * mib);
  EXPECT_LT(peak, 2 * mib + mib / 8);
  EXPECT_GT(tr::free_memory(torch::kCPU), 0u);
  // A step whose memory is 1 MiB per sample: the probe finds it.
  const auto c = tr::auto_batch([&](int64_t b) { torch::ones({b, int64_t(mib / 8)}, torch::kFloat64).sum(); },
                                torch::kCPU, 0.5, 4096);
  EXPECT_GE(c.per_sample_bytes, mib);
  EXPECT_LT(c.per_sample_bytes, mib + mib / 8);
  EXPECT_GE(c.batch, 1);
}

// Some CPU kernels take scratch through the allocator's raw_allocate, which asserts that a
// pointer is its own context; and tensors made during a probe may be freed after it. (A
// convolution's backward in a probe failed with "dptr.get() == dptr.get_context()".)
TEST(TrainResources, CpuPeakMemoryKeepsRawAllocationsAndTensorsThatOutliveIt) {
  torch::Tensor kept;
  const std::size_t peak = tr::peak_memory(torch::kCPU, [&] {
    c10::Allocator* a = c10::GetCPUAllocator();
    void* p = a->raw_allocate(4096);
    ASSERT_NE(p, nullptr);
    static_cast<char*>(p)[4095] = 1;
    a->raw_deallocate(p);
    kept = torch::ones({1024}, torch::kFloat64);
    const auto x = torch::randn({2, 1, 12, 12}).requires_grad_();
    const auto w = torch::randn({3, 1, 3, 3}).requires_grad_();
    (void)torch::autograd::grad({torch::conv2d(x, w).square().sum()}, {x, w});
  });
  EXPECT_GE(peak, 8192u);
  EXPECT_EQ(kept.sum().item<double>(), 1024.0);
  kept = torch::Tensor();  // freed by the wrapper, after the probe
  EXPECT_EQ(torch::ones({4}).sum().item<float>(), 4.0f);
}

TEST(TrainResources, DeviceChoiceTimesEachCandidateAndSkipsOnesThatFail) {
  const auto devs = tr::available_devices();
  ASSERT_FALSE(devs.empty());
  EXPECT_TRUE(devs[0].is_cpu());
  auto make = [](const torch::Device& d) -> std::function<torch::Tensor()> {
    if (d.is_cuda()) throw std::runtime_error("no such device here");
    return [] { return torch::ones({64, 64}).matmul(torch::ones({64, 64})).sum(); };
  };
  const auto c = tr::choose_device(make, {torch::kCPU, torch::Device(torch::kCUDA, 3)}, 1, 3);
  EXPECT_TRUE(c.device.is_cpu());
  ASSERT_EQ(c.seconds_per_step.size(), 1u);
  EXPECT_GT(c.seconds_per_step[0].second, 0.0);
  EXPECT_NE(c.reason.find("skipped (no such device here)"), std::string::npos) << c.reason;
}

// What it prevents: a program linked only against LibTorch's CPU half had no CUDA kernels
// (qfleet-meta with device = cuda on an H200, 2026-11-29: "Could not run
// 'aten::empty_strided' with arguments from the 'CUDA' backend").
TEST(TrainResources, LoadsLibTorchsCudaHalfWhereThisLibTorchHasOne) {
  Dl_info info{};
  ASSERT_NE(dladdr(reinterpret_cast<const void*>(&at::globalContext), &info), 0);
  const auto half = std::filesystem::path(info.dli_fname).parent_path() / "libtorch_cuda.so";
  std::string why;
  const bool loaded = tr::load_torch_cuda(&why);
  EXPECT_EQ(loaded, std::filesystem::exists(half)) << why;
  const auto op = c10::Dispatcher::singleton().findSchemaOrThrow("aten::empty_strided", "");
  EXPECT_EQ(op.hasKernelForDispatchKey(c10::DispatchKey::CUDA), loaded) << why;
  if (!loaded) {
    EXPECT_NE(why.find("no CUDA half"), std::string::npos) << why;
  }
  std::string again;
  EXPECT_EQ(tr::load_torch_cuda(&again), loaded);  // once: the same answer after
  EXPECT_EQ(again, why);
}

TEST(TrainResources, DeviceFromSettingNamesItsReason) {
  std::string why;
  EXPECT_TRUE(tr::device_from_setting("cpu", &why).is_cpu());
  EXPECT_EQ(why, "asked for");
  tr::load_torch_cuda();  // (as device_from_setting does for "automatic", before torch is asked)
  const bool gpu = torch::cuda::is_available();
  EXPECT_EQ(tr::device_from_setting("automatic", &why).is_cuda(), gpu);
  EXPECT_EQ(why, gpu ? "automatic: a CUDA device is visible" : "automatic: no CUDA device is visible");
  try {
    tr::device_from_setting("auto");
    ADD_FAILURE() << "device \"auto\" was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "device \"auto\" is spelled \"automatic\"");
  }
  if (!gpu) {
    EXPECT_THROW(tr::device_from_setting("cuda"), std::invalid_argument);
  }
  try {
    tr::device_from_setting("gpu");
    FAIL() << "an unknown device name was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("\"cpu\", \"cuda\" or \"automatic\""), std::string::npos) << e.what();
  }
}

}  // namespace

namespace {

// DeviceOptimizer against torch::optim's Adam, AdamW and SGD on the same gradients under a
// cosine learning-rate schedule, with its state handed to torch::optim and back halfway.
void expect_follows_torch_optim(bool lr_on_device) {
  using Kind = tr::OptimizerKind;
  for (const Kind kind : {Kind::adam, Kind::adamw, Kind::sgd}) {
    SCOPED_TRACE(int(kind));
    auto a = torch::tensor({0.5, -1.0, 2.0}, torch::kFloat64).requires_grad_();
    auto b = a.detach().clone().requires_grad_();
    tr::DeviceOptimizerOptions o;
    o.kind = kind;
    o.lr = 0.05;
    o.weight_decay = 0.01;
    o.momentum = 0.9;
    o.lr_on_device = lr_on_device;
    tr::DeviceOptimizer mine({a}, o);
    std::unique_ptr<torch::optim::Optimizer> ref;
    if (kind == Kind::adam) ref = std::make_unique<torch::optim::Adam>(std::vector<torch::Tensor>{b}, torch::optim::AdamOptions(0.05).weight_decay(0.01));
    if (kind == Kind::adamw) ref = std::make_unique<torch::optim::AdamW>(std::vector<torch::Tensor>{b}, torch::optim::AdamWOptions(0.05).weight_decay(0.01));
    if (kind == Kind::sgd) ref = std::make_unique<torch::optim::SGD>(std::vector<torch::Tensor>{b}, torch::optim::SGDOptions(0.05).momentum(0.9).weight_decay(0.01));
    for (int i = 0; i < 8; ++i) {
      const double lr = 0.05 * (1 + std::cos(3.14159 * i / 8)) / 2 + 0.001;  // a cosine schedule
      mine.set_lr(lr);
      ref->param_groups()[0].options().set_lr(lr);
      mine.zero_grad();
      ref->zero_grad();
      (a.sin() * a).sum().backward();
      (b.sin() * b).sum().backward();
      mine.step();
      ref->step();
      if (i == 3) {  // mid-run: ours into theirs, then a fresh one of ours from theirs
        mine.export_state(*ref);
        tr::DeviceOptimizer again({a}, o);
        again.import_state(*ref);
        torch::serialize::OutputArchive x, y;
        mine.save(x);
        again.save(y);
        std::ostringstream sx, sy;
        x.save_to(sx);
        y.save_to(sy);
        EXPECT_EQ(sx.str(), sy.str());  // the same state came back
      }
    }
    EXPECT_LT((a - b).abs().max().item<double>(), 1e-13);
    EXPECT_GT((a - torch::tensor({0.5, -1.0, 2.0}, torch::kFloat64)).abs().max().item<double>(), 1e-2);
  }
}

// The fused kernels (the learning rate baked into each launch).
TEST(TrainDeviceOptimizer, MatchesTorchOptimOnTheSameGradients) { expect_follows_torch_optim(false); }

// The learning rate as a device tensor (a schedule between replays of a captured step).
TEST(TrainDeviceOptimizer, DeviceLearningRateAndTorchOptimStateFollowTorchOptim) { expect_follows_torch_optim(true); }

// Bad input: a negative learning rate, and torch::optim state of another kind or parameters.
TEST(TrainDeviceOptimizer, RefusesABadLearningRateAndForeignState) {
  auto p = torch::tensor({1.0, 2.0}, torch::kFloat64).requires_grad_();
  tr::DeviceOptimizerOptions o;
  o.lr_on_device = true;
  tr::DeviceOptimizer opt({p}, o);
  EXPECT_THROW(opt.set_lr(-1.0), std::invalid_argument);
  EXPECT_THROW(opt.set_lr(std::nan("")), std::invalid_argument);
  auto q = p.detach().clone().requires_grad_();
  torch::optim::SGD sgd(std::vector<torch::Tensor>{q}, torch::optim::SGDOptions(0.1).momentum(0.9));
  q.sum().backward();
  sgd.step();  // SGD state where Adam's is expected
  EXPECT_THROW(opt.import_state(sgd), std::invalid_argument);
  auto r = torch::zeros({3}, torch::kFloat64).requires_grad_();
  torch::optim::Adam other(std::vector<torch::Tensor>{r}, torch::optim::AdamOptions(0.1));
  EXPECT_THROW(opt.import_state(other), std::invalid_argument);  // another parameter's shape
  EXPECT_THROW(opt.export_state(other), std::invalid_argument);
}

TEST(TrainDeviceOptimizer, ItsStateGoesThroughACheckpoint) {
  const fs::path dir = temp_dir("device_optimizer");
  auto p = torch::tensor({1.0, 2.0}, torch::kFloat64).requires_grad_();
  tr::DeviceOptimizer opt({p}, {});
  auto step = [&] {
    opt.zero_grad();
    p.square().sum().backward();
    opt.step();
  };
  step();
  step();
  tr::TrainState s;
  s.tensors = {{"p", p}};
  s.device_optimizers = {{"opt", &opt}};
  tr::save_checkpoint((dir / "ck.pt").string(), s);
  step();
  const auto want = p.detach().clone();
  tr::load_checkpoint((dir / "ck.pt").string(), s);  // back to two steps
  step();
  EXPECT_TRUE(torch::equal(p.detach(), want));
  fs::remove_all(dir);
}

}  // namespace
