// The nearest of a set of names to one that matches none, for the "did you mean" of an
// error message: the JSON readers' unknown keys and the apps' configurations.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace qfleet {

// Levenshtein distance (insertions, deletions, substitutions), letters compared
// without regard to case.
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (same ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The first of `names` (strings or string views) fewer than `below` edits from
// `key`, the nearest one, or "" when none is that near.
template <class Names>
std::string nearest_name(std::string_view key, const Names& names, std::size_t below) {
  std::string best;
  for (const auto& name : names) {
    // The distance is at least the difference of the lengths: a key of megabytes is near
    // no name, and is not compared letter by letter (seconds per name).
    const std::size_t n = std::string_view(name).size();
    if ((key.size() > n ? key.size() - n : n - key.size()) >= below) continue;
    const std::size_t d = edit_distance(key, name);
    if (d < below) {
      below = d;
      best = std::string(name);
    }
  }
  return best;
}

}  // namespace qfleet
