// The executor registry (core/executor.hpp): a row per (model kind, device) — the
// cpu once per instruction set, the device backend's after it — placement by one
// rule for every model kind, and a backend-matrix test per model kind that runs
// every row of its kind (BackendMatrix, DmMatrix, OpenMatrix).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "core/executor.hpp"
#include "core/open_plan.hpp"
#include "core/plan.hpp"
#include "unit/expect_error.hpp"
#include "unit/open_harness.hpp"

namespace {

using qfleet::detail::Executor;
using qfleet::detail::ModelKind;

qfleet::Circuit pure_circuit() {
  qfleet::Circuit c(2);
  c.add("RY", {0}, {qfleet::Param::weight(0)}).add("CNOT", {0, 1}).expval("Z1");
  return c;
}
qfleet::Circuit noisy_circuit() {
  qfleet::Circuit c = pure_circuit();
  c.channel("Depolarizing", {0}, {qfleet::Param(0.1)});
  return c;
}
qfleet::OpenSystem open_system() {
  std::mt19937_64 rng(3);
  return ref::build(ref::kind_model(ref::kProblemKinds[0], rng));
}

// How each kind's programs report where they run, compiled with `device` and `isa`.
std::string execution_of(ModelKind kind, qfleet::Device device, const std::string& isa) {
  if (kind == ModelKind::open_system) {
    qfleet::OpenCompileOptions o;
    o.device = device;
    o.isa = isa;
    return qfleet::compile(open_system(), o).execution(8, true);
  }
  qfleet::CompileOptions o;
  o.device = device;
  o.isa = isa;
  return qfleet::compile(kind == ModelKind::statevector ? pure_circuit() : noisy_circuit(), o).execution(8, true);
}

TEST(Executors, EveryModelKindHasACpuRowPerInstructionSet) {
  const std::vector<std::string> isas = qfleet::available_isas();
  ASSERT_FALSE(isas.empty());
  for (ModelKind kind : qfleet::detail::kModelKinds) {
    for (const std::string& isa : isas) {
      const Executor* e = qfleet::detail::find_executor(kind, "cpu", isa);
      ASSERT_NE(e, nullptr) << qfleet::detail::model_kind_name(kind) << " on cpu " << isa;
      EXPECT_TRUE(e->host);
      EXPECT_GE(e->lanes_f64, 1);
      EXPECT_EQ(e->lanes_f32 % e->lanes_f64, 0) << "float lanes are a multiple of double lanes";
      EXPECT_TRUE(e->supports && e->estimate_seconds && e->run && e->describe);
      EXPECT_EQ(e->prepare, nullptr) << "host rows run on the host view";
      EXPECT_EQ(execution_of(kind, qfleet::Device::cpu, isa).rfind("cpu " + isa + ":", 0), 0u);
    }
  }
  std::size_t device_rows = 0;
  for (const Executor& e : qfleet::detail::executors()) device_rows += e.host ? 0 : 1;
  EXPECT_EQ(qfleet::detail::executors().size(), isas.size() * std::size(qfleet::detail::kModelKinds) + device_rows);
}

TEST(Executors, DeviceRowsComeFromTheDeviceBackendOnePerModelKind) {
  std::set<ModelKind> kinds;
  for (const Executor& e : qfleet::detail::executors()) {
    if (e.host) continue;
    EXPECT_TRUE(qfleet::built_with_cuda()) << "a device row in a build without a device backend";
    EXPECT_EQ(std::string(e.device), "cuda");
    EXPECT_TRUE(e.prepare && e.supports && e.estimate_seconds && e.run && e.describe);
    EXPECT_TRUE(kinds.insert(e.kind).second) << "two cuda rows for " << qfleet::detail::model_kind_name(e.kind);
  }
  EXPECT_EQ(kinds.size(), qfleet::built_with_cuda() ? std::size(qfleet::detail::kModelKinds) : 0u);
}

// Placement reads the rows alike for every kind: the cpu row of the asked instruction
// set; without a visible GPU, Device::cuda is a clear error and automatic the cpu.
TEST(Executors, PlacementIsOneRuleForEveryModelKind) {
  const std::string best = qfleet::available_isas().front();
  for (ModelKind kind : qfleet::detail::kModelKinds) {
    SCOPED_TRACE(qfleet::detail::model_kind_name(kind));
    EXPECT_EQ(execution_of(kind, qfleet::Device::cpu, "automatic").rfind("cpu " + best + ":", 0), 0u);
    EXPECT_QFLEET_ERROR(execution_of(kind, qfleet::Device::cpu, "sse9"), "instruction set 'sse9'", "available");
    EXPECT_QFLEET_ERROR(execution_of(kind, qfleet::Device::cpu, "auto"), "instruction set 'auto' is spelled 'automatic'");
    if (qfleet::cuda_device_count() > 0) continue;
    EXPECT_EQ(execution_of(kind, qfleet::Device::automatic, "automatic").rfind("cpu ", 0), 0u);
    const std::string e = qfleet_test::error_of([&] { execution_of(kind, qfleet::Device::cuda, "automatic"); });
    EXPECT_TRUE(e.find("no CUDA backend") != std::string::npos || e.find("no CUDA device is visible") != std::string::npos)
        << e;
  }
}

// A model kind joins the registry with a backend-matrix test that runs every row of
// its kind; a kind without one fails here.
TEST(Executors, EveryModelKindHasABackendMatrix) {
  const std::map<ModelKind, std::string> matrix = {{ModelKind::statevector, "BackendMatrix"},
                                                   {ModelKind::density_matrix, "DmMatrix"},
                                                   {ModelKind::open_system, "OpenMatrix"}};
  std::set<std::string> suites;
  const auto* unit = ::testing::UnitTest::GetInstance();
  for (int i = 0; i < unit->total_test_suite_count(); ++i) suites.insert(unit->GetTestSuite(i)->name());
  for (ModelKind kind : qfleet::detail::kModelKinds) {
    const auto it = matrix.find(kind);
    ASSERT_NE(it, matrix.end()) << qfleet::detail::model_kind_name(kind) << " has no backend matrix";
    EXPECT_TRUE(suites.count(it->second)) << it->second;
  }
}

}  // namespace
