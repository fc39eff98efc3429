// A catalogue entry by name (include/qfleet/gates.hpp's and channels.hpp's tables, each
// entry with `name` and `id`): the table's own names first, then the aliases other
// tools use; an unknown name is an Error listing every known one.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "qfleet/error.hpp"

namespace qfleet::detail {

template <class Id, class Table, std::size_t N>
Id id_from_name(std::string_view name, const Table& table, const std::pair<std::string_view, Id> (&aliases)[N],
                const char* what, const char* plural) {
  for (const auto& e : table) {
    if (e.name == name) return e.id;
  }
  for (const auto& [alias, id] : aliases) {
    if (alias == name) return id;
  }
  std::string known;
  for (const auto& e : table) {
    if (!known.empty()) known += ", ";
    known += e.name;
  }
  throw Error("unknown " + std::string(what) + " '" + std::string(name) + "'; known " + plural + ": " + known);
}

}  // namespace qfleet::detail
