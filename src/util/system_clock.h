#pragma once
#include <chrono>

#include "core/clock.h"

namespace payorch {

// The real clocks: the wall clock (UTC) and steady_clock. The only place payorch reads either.
class SystemClock final : public Clock {
public:
  UnixMillis now_ms() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  MonotonicTime monotonic() const override { return std::chrono::steady_clock::now(); }
};

}  // namespace payorch
