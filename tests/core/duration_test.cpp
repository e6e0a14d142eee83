#include <doctest/doctest.h>

#include "core/duration.h"

using namespace payorch;
using namespace std::chrono_literals;

TEST_CASE("format_duration: every unit that is not zero, as the configuration writes them") {
  CHECK(format_duration(90s) == "1m30s");
  CHECK(format_duration(24h) == "1d");
  CHECK(format_duration(22h) == "22h");
  CHECK(format_duration(Millis(24 * 3'600'000LL * 9 / 10)) == "21h36m");
  CHECK(format_duration(1h + 40s) == "1h40s");
  CHECK(format_duration(250ms) == "250ms");
  CHECK(format_duration(24h * 30) == "30d");
  CHECK(format_duration(0ms) == "0ms");
}
