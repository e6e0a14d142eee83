#pragma once
// The clock of a node on PostgreSQL: the database server's clock (docs/postgres.md, "Time across
// nodes"). Every time one node stores and another compares — a lease's expiry, a due time, the
// first submit behind the retry budget and key retention, the not-found window — must come from
// one clock, or a node whose own clock is ahead takes over live leases and judges budgets spent.
// The daemon gives the whole node (engine, APIs, delivery, retention) a ServerClock: its wall
// time is the server's clock_timestamp() as last sampled, counted forward on the local monotonic
// clock, so the local wall clock does not matter at all. Monotonic readings stay local.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/clock.h"

namespace payorch::store::pg {

class Connection;

using Micros = std::chrono::microseconds;

// The statement a sample runs: the server's clock_timestamp() (the time it reads its clock, not
// its transaction's start), in µs since the Unix epoch.
inline constexpr const char* server_clock_statement =
    "SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint";

// One sample of the server's clock: `server_us` (clock_timestamp(), µs since the Unix epoch),
// read by a statement sent at local monotonic time `sent` and answered at `answered`. The server
// read its clock somewhere in between, so at the midpoint the server's time was `server_us`
// within half the round trip.
struct ServerSample {
  std::int64_t server_us = 0;
  MonotonicTime sent{};
  MonotonicTime answered{};

  Micros round_trip() const { return std::chrono::duration_cast<Micros>(answered - sent); }
  MonotonicTime midpoint() const { return sent + (answered - sent) / 2; }
};

// The server's time at any local monotonic instant, from the best sample so far. Pure
// arithmetic, no I/O and no lock: ServerClock guards it.
class ServerTimeline {
public:
  // How fast the local monotonic clock may run off the server's, as the error bound grows with
  // the age of the sample (a quartz clock: tens of ppm; NTP assumes at most 15).
  static constexpr std::int64_t max_drift_ppm = 100;

  // Takes `s` as the anchor when there is none yet, or when its error bound (half its round
  // trip) is no larger than the current anchor's bound aged to `s`'s midpoint: the anchor is
  // always the sample that bounds the error best. Returns whether it was taken.
  bool adopt(const ServerSample& s);
  bool anchored() const { return anchor_.has_value(); }

  // The server's time at `t` in milliseconds, never earlier than a time this returned before: a
  // new anchor that would move it back holds it still until the server's time catches up.
  // Requires anchored().
  UnixMillis now_ms(MonotonicTime t);
  // The server's time at `t` as the anchor has it (µs), without the hold.
  std::int64_t estimate_us(MonotonicTime t) const;
  // How far the time now_ms(t) reports (before it is floored to the millisecond) may be off the
  // server's clock: half the anchor's round trip, the drift allowance for the anchor's age, and
  // the hold (how far the last answer is ahead of the estimate).
  Micros error_at(MonotonicTime t) const;
  // Since the anchor's midpoint.
  Micros age(MonotonicTime t) const;

private:
  Micros aged_bound(MonotonicTime t) const;

  std::optional<ServerSample> anchor_;
  UnixMillis last_ms_ = std::numeric_limits<UnixMillis>::min();
};

struct ServerClockOptions {
  std::string url;  // the database's libpq URI (the store's)
  // A round of samples every period, on a connection of the clock's own.
  Millis period{1000};
  // Samples per round; the one with the smallest round trip is offered to the timeline.
  int samples_per_round = 3;
  // Where monotonic readings come from, and the local wall time the offset is reported
  // against; null: the system clock.
  const Clock* local = nullptr;
};

class ServerClock final : public Clock {
public:
  // Connects and takes a first round of samples: the clock is valid once constructed. Throws
  // pg::Error (connection_lost) when the server cannot be reached: a node that cannot read the
  // server's time does not start. Logs `clock.server` with the measured offset.
  explicit ServerClock(ServerClockOptions opts);
  // stop().
  ~ServerClock() override;
  ServerClock(const ServerClock&) = delete;
  ServerClock& operator=(const ServerClock&) = delete;

  // Starts the sampler: a round every period on a thread of its own. While the server cannot be
  // reached the time goes on counting from the last sample (`clock.sample_failed`, once per
  // outage) and the error bound grows by the drift allowance.
  void start();
  // Stops the sampler and closes its connection (waits for a round in flight).
  void stop();

  UnixMillis now_ms() const override;
  MonotonicTime monotonic() const override { return local_->monotonic(); }

  struct Offset {
    Micros offset;  // the server's time minus this node's own wall clock, now
    Micros error;   // how far the server time this clock reports may be off (ServerTimeline::error_at)
    Micros age;     // since the anchor sample
  };
  Offset offset() const;
  // One round now, as the sampler takes it: true when a sample was read (adopted or not).
  // Never throws: a failure closes the connection, and the next round connects again.
  bool sample_round();
  // `payorch_clock_offset_seconds`, `payorch_clock_error_seconds`,
  // `payorch_clock_sample_age_seconds` (Metrics::add_collector).
  std::string render_metrics() const;

private:
  // Reads samples_per_round samples, connecting first when needed, and returns the one with the
  // smallest round trip. Throws pg::Error.
  ServerSample best_of_round();
  void run();

  ServerClockOptions opts_;
  const Clock* local_;
  std::unique_ptr<Connection> conn_;  // the sampler's; used by one thread at a time
  bool failing_ = false;              // the sampler's last round failed (logged once)

  mutable std::mutex mu_;  // guards timeline_
  mutable ServerTimeline timeline_;

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread sampler_;
};

}  // namespace payorch::store::pg
