#pragma once
// Timing bounds for slower builds. Sanitizer builds (tools/test --sanitize asan|tsan) run
// payorch several times slower and set PAYORCH_TEST_SLOWDOWN (a factor >= 1); an upper bound on
// how long something may take is multiplied by it, so a sanitizer run keeps the check instead
// of dropping it. Lower bounds ("not before 900 ms") are never scaled. Unset or invalid: 1.
#include <chrono>
#include <cstdlib>

namespace payorch::test {

inline double slowdown() {
  static const double factor = [] {
    const char* text = std::getenv("PAYORCH_TEST_SLOWDOWN");
    const double value = text != nullptr ? std::strtod(text, nullptr) : 1.0;
    return value >= 1.0 ? value : 1.0;
  }();
  return factor;
}

// `bound` times slowdown(), in the same unit (rounded down).
template <class Rep, class Period>
std::chrono::duration<Rep, Period> scaled(std::chrono::duration<Rep, Period> bound) {
  return std::chrono::duration<Rep, Period>(static_cast<Rep>(static_cast<double>(bound.count()) * slowdown()));
}

}  // namespace payorch::test
