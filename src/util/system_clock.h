#pragma once
#include <chrono>

#include "core/clock.h"

namespace payorch {

// The real wall clock, UTC.
class SystemClock final : public Clock {
public:
  UnixMillis now_ms() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace payorch
