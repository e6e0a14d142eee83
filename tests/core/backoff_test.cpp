// core/backoff.h: the doubling both backoffs share.
#include "core/backoff.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>

using namespace std::chrono_literals;
using payorch::doubled_wait;

TEST_CASE("doubled_wait: initial, then doubled per retry, capped; no overflow at any n") {
  CHECK(doubled_wait(500ms, 60s, 1) == 500ms);
  CHECK(doubled_wait(500ms, 60s, 2) == 1s);
  CHECK(doubled_wait(500ms, 60s, 4) == 4s);
  CHECK(doubled_wait(500ms, 60s, 8) == 60s);  // 64 s capped
  CHECK(doubled_wait(500ms, 60s, 0) == 500ms);
  CHECK(doubled_wait(500ms, 60s, -3) == 500ms);
  CHECK(doubled_wait(500ms, 60s, std::numeric_limits<std::int64_t>::max()) == 60s);
  CHECK(doubled_wait(90s, 60s, 1) == 60s);  // an initial above the cap is capped too
}
