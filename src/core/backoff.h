#pragma once
// Exponential backoff, the one home of its doubling: the engine's vendor calls (core/decide.h,
// equal jitter) and the webhook pushes (delivery/deliverer.h, up to 20 % taken off) wait
// initial × 2^(n-1) before their n-th retry, capped, and differ only in how they spread it.
#include <algorithm>
#include <cstdint>

#include "core/clock.h"

namespace payorch {

// initial × 2^(n-1), capped at `max` (n < 1 counts as 1); never overflows, whatever n.
constexpr Millis doubled_wait(Millis initial, Millis max, std::int64_t n) {
  Millis wait = initial;
  for (std::int64_t i = 1; i < n && wait < max; ++i) wait *= 2;
  return std::min(wait, max);
}

}  // namespace payorch
