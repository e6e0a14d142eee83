#pragma once
// Impossible states, stated. `expect(value, "belief")` returns the value an optional must hold
// at that point, or throws std::logic_error naming the broken belief and the line that held it.
// Callers run inside a writer transaction, so a broken belief rolls the whole transaction back
// (nothing half-written) and is logged with the transaction's error; it never reads an empty
// optional.
//
// The caller's place comes from __builtin_FILE/__builtin_LINE (gcc and clang alike): clang 14,
// the sanitizer build's compiler, has no std::source_location over libstdc++ 12.
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace payorch {

[[noreturn]] inline void broken_belief(std::string_view belief, const char* file, int line) {
  throw std::logic_error("impossible state at " + std::string(file) + ":" + std::to_string(line) +
                         ": expected " + std::string(belief));
}

template <class T>
const T& expect(const std::optional<T>& v, std::string_view belief,
                const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  if (!v) broken_belief(belief, file, line);
  return *v;
}

template <class T>
T& expect(std::optional<T>& v, std::string_view belief, const char* file = __builtin_FILE(),
          int line = __builtin_LINE()) {
  if (!v) broken_belief(belief, file, line);
  return *v;
}

}  // namespace payorch
