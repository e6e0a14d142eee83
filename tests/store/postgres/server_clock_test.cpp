// store/postgres/server_clock.h: the timeline's arithmetic (the anchor with the best bound, the
// bound growing with age, never back), and the ServerClock against the test cluster: it follows
// the server's clock whatever the local wall clock says, within its error bound, never goes
// back while it samples, fails its construction when the server cannot be reached, and counts
// on from its last sample when the server goes away.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "store/postgres/connection.h"
#include "store/postgres/server_clock.h"
#include "support/pg_cut_proxy.h"
#include "support/ports.h"
#include "support/postgres_cluster.h"
#include "support/slowdown.h"
#include "util/system_clock.h"

namespace payorch::store::pg {
namespace {

using namespace std::chrono_literals;

constexpr std::int64_t base_us = 1'700'000'000'000'000;  // a server time, µs

// A sample read between `sent` and `sent + round_trip`, the server at `server_us` then.
ServerSample sample_at(MonotonicTime sent, Micros round_trip, std::int64_t server_us) {
  return ServerSample{.server_us = server_us, .sent = sent, .answered = sent + round_trip};
}

// The real monotonic clock, and a wall clock `skew` off the machine's: a node whose own clock
// is wrong.
class SkewedClock final : public Clock {
public:
  explicit SkewedClock(Millis skew) : skew_(skew) {}
  UnixMillis now_ms() const override { return system_.now_ms() + skew_.count(); }
  MonotonicTime monotonic() const override { return system_.monotonic(); }

private:
  SystemClock system_;
  Millis skew_;
};

// The server's clock_timestamp() in whole ms, read on `conn`.
UnixMillis server_ms(Connection& conn) {
  return conn.exec("SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint").integer(0, 0);
}

std::int64_t whole_ms(Micros d) { return d.count() / 1000; }

}  // namespace

TEST_CASE("server clock: the timeline counts on from its anchor, its bound growing with age") {
  const MonotonicTime t0 = MonotonicTime{} + 1h;
  ServerTimeline timeline;
  CHECK_FALSE(timeline.anchored());
  REQUIRE(timeline.adopt(sample_at(t0, 2ms, base_us)));  // midpoint t0 + 1 ms
  const MonotonicTime mid = t0 + 1ms;
  CHECK(timeline.now_ms(mid) == base_us / 1000);
  CHECK(timeline.now_ms(mid + 500ms) == base_us / 1000 + 500);
  CHECK(timeline.error_at(mid + 500ms) == 1ms + 50us);  // half the round trip + 100 ppm of 500 ms
  CHECK(timeline.error_at(mid + 10s) == 1ms + 1ms);

  // A sample with a worse bound than the anchor's, aged, is not taken ...
  CHECK_FALSE(timeline.adopt(sample_at(mid + 1s, 10ms, base_us + 1'000'000 + 5'000)));
  CHECK(timeline.now_ms(mid + 1s + 5ms) == base_us / 1000 + 1005);
  // ... one with a bound as good is, and the time follows it.
  REQUIRE(timeline.adopt(sample_at(mid + 2s, 2ms, base_us + 2'000'000 + 1'000 + 3'000)));
  CHECK(timeline.now_ms(mid + 2s + 1ms) == base_us / 1000 + 2004);
}

TEST_CASE("server clock: a sample behind the last reading holds the time still; it never goes back") {
  const MonotonicTime t0 = MonotonicTime{} + 1h;
  ServerTimeline timeline;
  REQUIRE(timeline.adopt(sample_at(t0, 0us, base_us)));
  CHECK(timeline.now_ms(t0 + 100ms) == base_us / 1000 + 100);
  // The next sample, as good, says the server is 40 ms behind what the anchor counted.
  REQUIRE(timeline.adopt(sample_at(t0 + 100ms, 0us, base_us + 100'000 - 40'000)));
  CHECK(timeline.estimate_us(t0 + 100ms) == base_us + 60'000);
  CHECK(timeline.now_ms(t0 + 100ms) == base_us / 1000 + 100);  // held, not 60
  CHECK(timeline.now_ms(t0 + 120ms) == base_us / 1000 + 100);
  CHECK(timeline.error_at(t0 + 120ms) == 20ms + 2us);  // the hold (+ 100 ppm of 20 ms)
  // Counting on once the server's time has caught up.
  CHECK(timeline.now_ms(t0 + 150ms) == base_us / 1000 + 110);
  CHECK(timeline.error_at(t0 + 150ms) == 5us);
}

TEST_CASE("server clock: follows the server's clock, not the node's own, within its error bound") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  // This node's own wall clock 5 minutes ahead; the server's is the machine's.
  const SkewedClock local(5min);
  ServerClock clock(ServerClockOptions{.url = db->url(), .local = &local});
  Connection conn(db->url());

  const ServerClock::Offset o = clock.offset();
  INFO("offset " << o.offset.count() << " us, error " << o.error.count() << " us");
  CHECK(o.offset < -5min + 1s);
  CHECK(o.offset > -5min - 1s);
  CHECK(o.error >= 0us);
  CHECK(o.error < 50ms);  // a loopback round trip
  for (int i = 0; i < 20; ++i) {
    const UnixMillis before = server_ms(conn);
    const UnixMillis read = clock.now_ms();
    const UnixMillis after = server_ms(conn);
    const std::int64_t slack = whole_ms(clock.offset().error) + 2;  // + the ms floors
    CHECK(read >= before - slack);
    CHECK(read <= after + slack);
    std::this_thread::sleep_for(10ms);
  }
}

TEST_CASE("server clock: samples every period and never goes back") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  ServerClock clock(ServerClockOptions{.url = db->url(), .period = 5ms});
  clock.start();
  UnixMillis last = clock.now_ms();
  const SystemClock system;
  const MonotonicTime end = system.monotonic() + 400ms;
  int readings = 0;
  int backwards = 0;
  while (system.monotonic() < end) {
    const UnixMillis now = clock.now_ms();
    backwards += now < last;
    last = now;
    ++readings;
  }
  CHECK(backwards == 0);
  CHECK(readings > 1000);
  // Rounds were taken (a round every 5 ms; the bound leaves room for a loaded or sanitized run,
  // where this loop competes with the sampler for the CPU).
  CHECK(clock.offset().age < test::scaled(std::chrono::milliseconds(250)));
  clock.stop();
}

TEST_CASE("server clock: a server that cannot be reached fails the construction, password hidden") {
  const std::string url = "postgresql://payorch:s3cret-pw@127.0.0.1:" +
                          std::to_string(test::free_port()) + "/payorch?connect_timeout=2";
  std::optional<std::string> message;
  try {
    ServerClock clock(ServerClockOptions{.url = url});
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::connection_lost);
    message = e.what();
  }
  REQUIRE(message);
  CHECK(message->find("cannot read the database server's clock") != std::string::npos);
  CHECK(message->find("s3cret-pw") == std::string::npos);
}

TEST_CASE("server clock: with the server gone it counts on from its last sample, its bound growing") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  auto proxy = std::make_unique<test::PgCutProxy>(db->url());
  ServerClock clock(ServerClockOptions{.url = proxy->url_for(db->url()) + "&connect_timeout=2"});
  REQUIRE(clock.sample_round());
  proxy.reset();  // every connection cut, the port closed
  const UnixMillis before = clock.now_ms();
  const Micros error_before = clock.offset().error;
  CHECK_FALSE(clock.sample_round());
  std::this_thread::sleep_for(50ms);
  CHECK(clock.now_ms() >= before + 50);
  CHECK(clock.offset().error > error_before);
  CHECK(clock.offset().age >= 50ms);
}

}  // namespace payorch::store::pg
