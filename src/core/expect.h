#pragma once
// Impossible states, stated. `expect(value, "belief")` returns the value an optional must hold
// at that point, or throws std::logic_error naming the broken belief and the line that held it.
// Callers run inside a writer transaction, so a broken belief rolls the whole transaction back
// (nothing half-written) and is logged with the transaction's error; it never reads an empty
// optional.
#include <optional>
#include <source_location>
#include <stdexcept>
#include <string>
#include <string_view>

namespace payorch {

[[noreturn]] inline void broken_belief(std::string_view belief, const std::source_location& at) {
  throw std::logic_error("impossible state at " + std::string(at.file_name()) + ":" +
                         std::to_string(at.line()) + ": expected " + std::string(belief));
}

template <class T>
const T& expect(const std::optional<T>& v, std::string_view belief,
                const std::source_location& at = std::source_location::current()) {
  if (!v) broken_belief(belief, at);
  return *v;
}

template <class T>
T& expect(std::optional<T>& v, std::string_view belief,
          const std::source_location& at = std::source_location::current()) {
  if (!v) broken_belief(belief, at);
  return *v;
}

}  // namespace payorch
