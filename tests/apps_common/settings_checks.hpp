// Checks every app's settings table takes (apps/common/settings.hpp): every schema key bound,
// in the schema's order, the struct's defaults the schema's; and a struct built in code with
// a bad value refused by validate() with the expected words, the default struct taken.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/settings.hpp"

namespace settings_checks {

template <class S>
void expect_bound(const std::vector<qfleet::app::Setting<S>>& table, const qfleet::app::Schema& schema) {
  std::vector<std::string> bound;
  for (const auto& s : table) bound.push_back(s.key);
  EXPECT_EQ(bound, schema.key_order());
  EXPECT_EQ(qfleet::app::defaults_disagree(table, schema), "");
}

template <class S>
using Edits = std::vector<std::pair<std::function<void(S&)>, std::string>>;

// validate is the app's, found by argument-dependent lookup.
template <class S>
void expect_refused(const Edits<S>& edits) {
  for (const auto& [edit, needle] : edits) {
    S c;
    edit(c);
    try {
      validate(c);
      ADD_FAILURE() << "taken: " << needle;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(validate(S{}));
}

}  // namespace settings_checks
