// The clock interface: wall time and monotonic time come from one injected Clock, so a test
// moves both and a wall-clock step never shortens or stretches a measured duration.
#include <doctest/doctest.h>

#include <stdexcept>
#include <thread>

#include "core/clock.h"
#include "util/system_clock.h"

using namespace payorch;
using namespace std::chrono_literals;

TEST_CASE("ManualClock: advance moves wall and monotonic time together; set steps the wall clock alone") {
  ManualClock clock(1'000);
  const MonotonicTime t0 = clock.monotonic();
  clock.advance(1500ms);
  CHECK(clock.now_ms() == 2'500);
  CHECK(clock.monotonic() - t0 == 1500ms);

  // An operator or NTP steps the wall clock back an hour: a duration measured across the step
  // is still the time that passed.
  clock.set(2'500 - 3'600'000);
  CHECK(clock.now_ms() == 2'500 - 3'600'000);
  CHECK(clock.monotonic() - t0 == 1500ms);
  clock.advance(250ms);
  CHECK(clock.monotonic() - t0 == 1750ms);
  CHECK(clock.now_ms() == 2'750 - 3'600'000);

  CHECK_THROWS_AS(clock.advance(-1ms), std::logic_error);
  CHECK(clock.monotonic() - t0 == 1750ms);  // a refused step moved nothing
  CHECK(clock.now_ms() == 2'750 - 3'600'000);
}

TEST_CASE("SystemClock: monotonic time never goes back and follows the time that passed") {
  SystemClock clock;
  const MonotonicTime a = clock.monotonic();
  std::this_thread::sleep_for(20ms);
  const MonotonicTime b = clock.monotonic();
  CHECK(b - a >= 20ms);
  CHECK(clock.monotonic() >= b);
}
