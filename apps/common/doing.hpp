// What a run is doing, in its user's terms, for the errors raised deep inside LibTorch or the
// engine, whose own text names neither the setting nor the step behind it: the error ladder
// (cli_errors.hpp) prints "qfleet-classify: error: while training, step 38 of 4690 (batch =
// 64, device = cuda): CUDA error: out of memory" instead of LibTorch's line alone.
//
// doing(what, body) runs body(); an exception that leaves it is noted with what() (built only
// then: a phase around every training step costs no string per step) and rethrown as it was,
// its type unchanged. The note names that exception object, so the innermost phase it left is
// the one named, and an exception handled inside the program leaves nothing a later error
// could pick up.
#pragma once

#include <exception>
#include <string>
#include <type_traits>
#include <utility>

namespace qfleet::app {

namespace doing_detail {

struct Note {
  std::exception_ptr of;
  std::string what;
};
inline Note& note() {
  thread_local Note n;
  return n;
}

}  // namespace doing_detail

template <class What, class Body>
decltype(auto) doing(What&& what, Body&& body) {
  try {
    return body();
  } catch (...) {
    auto& n = doing_detail::note();
    const std::exception_ptr e = std::current_exception();
    if (n.of != e) {  // the innermost phase notes it; the phases around it leave the note be
      try {
        if constexpr (std::is_invocable_v<What>)
          n.what = what();
        else
          n.what = std::string(what);
        n.of = e;
      } catch (...) {  // (the exception keeps its own text)
      }
    }
    throw;
  }
}

// What the run was doing where the exception being handled left it ("" where it left no
// phase). Call inside a handler; the note is cleared.
inline std::string doing_when_thrown() {
  auto& n = doing_detail::note();
  const bool ours = n.of != nullptr && n.of == std::current_exception();
  std::string what = ours ? std::move(n.what) : std::string();
  n = {};
  return what;
}

}  // namespace qfleet::app
