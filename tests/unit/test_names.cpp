// The option enums' name tables (include/qfleet/names.hpp): every value has one
// name, names are unique, and name -> value -> name round-trips; unknown names map
// to nothing, and the listing for error messages reads "a", "b" or "c".
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "qfleet/names.hpp"
#include "qfleet/nearest_name.hpp"

namespace {

template <class E, std::size_t N>
void expect_table_is_complete(const std::array<qfleet::EnumName<E>, N>& t, int n_values) {
  ASSERT_EQ(int(N), n_values) << "a value of the enum has no row";
  std::set<std::string_view> names;
  std::set<int> values;
  for (const auto& e : t) {
    EXPECT_TRUE(names.insert(e.name).second) << e.name;
    EXPECT_TRUE(values.insert(int(e.value)).second) << e.name;
    EXPECT_EQ(qfleet::value_in(t, e.name), e.value);
    EXPECT_EQ(qfleet::name_in(t, e.value), e.name);
  }
  for (int v = 0; v < n_values; ++v) EXPECT_NE(qfleet::name_in(t, E(v)), "?") << v;
  EXPECT_FALSE(qfleet::value_in(t, "").has_value());
  EXPECT_FALSE(qfleet::value_in(t, std::string(t[0].name) + "x").has_value());
}

TEST(Names, EveryOptionEnumHasOneNamePerValue) {
  // The enums' last values (Precision::complex128, Device::automatic, Solver::tsit5,
  // OpenForm::lindblad, ExactMethod::action)
  // bound them: a value added after these must extend both the enum and its table.
  expect_table_is_complete(qfleet::kPrecisionNames, int(qfleet::Precision::complex128) + 1);
  expect_table_is_complete(qfleet::kDeviceNames, int(qfleet::Device::automatic) + 1);
  expect_table_is_complete(qfleet::kSolverNames, int(qfleet::Solver::tsit5) + 1);
  expect_table_is_complete(qfleet::kOpenFormNames, int(qfleet::OpenForm::lindblad) + 1);
  EXPECT_EQ(qfleet::to_string(qfleet::OpenForm::lindblad), "lindblad");
  expect_table_is_complete(qfleet::kExactMethodNames, int(qfleet::ExactMethod::action) + 1);
  EXPECT_EQ(qfleet::to_string(qfleet::ExactMethod::action), "action");
  EXPECT_EQ(qfleet::to_string(qfleet::Solver::rk4), "rk4");
  EXPECT_EQ(qfleet::to_string(qfleet::Device::cuda), "cuda");
  EXPECT_EQ(qfleet::to_string(qfleet::Precision::complex64), "complex64");
}

TEST(Names, ErrorListingsReadNaturally) {
  EXPECT_EQ(qfleet::names_in(qfleet::kPrecisionNames), "\"complex64\" or \"complex128\"");
  EXPECT_EQ(qfleet::names_in(qfleet::kDeviceNames), "\"cpu\", \"cuda\" or \"automatic\"");
  EXPECT_EQ(qfleet::names_in(qfleet::kSolverNames), "\"exact\", \"rk4\", \"euler\", \"dopri5\" or \"tsit5\"");
}

}  // namespace

// The "did you mean" of unknown keys: Levenshtein distance without regard to case, and
// the first nearest name under the bound (none when every name is as far or farther).
TEST(NearestName, DistanceAndChoice) {
  EXPECT_EQ(qfleet::edit_distance("", ""), 0u);
  EXPECT_EQ(qfleet::edit_distance("", "abc"), 3u);
  EXPECT_EQ(qfleet::edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(qfleet::edit_distance("Gradients", "gradients"), 0u);
  EXPECT_EQ(qfleet::edit_distance("iteratons", "iterations"), 1u);
  const std::vector<std::string> keys = {"qubits", "gradients", "grad", "ops"};
  EXPECT_EQ(qfleet::nearest_name("gradient", keys, 3), "gradients");  // 1 edit, before grad's 4
  EXPECT_EQ(qfleet::nearest_name("qubit", keys, 3), "qubits");
  EXPECT_EQ(qfleet::nearest_name("shots", keys, 3), "");  // nothing within 2 edits
  EXPECT_EQ(qfleet::nearest_name("opz", keys, 1), "");    // the bound is strict
}
