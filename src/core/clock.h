#pragma once
// Time and randomness are injected: no logic in payorch reads the system clock or the
// system RNG directly, so tests drive leases, backoff, durations and ids with a manual clock
// and a seeded generator. (The network layer's socket deadlines — net/, http/server — are Asio
// steady_timer waits: they are real waits on steady_clock by nature, not readings of it.)
#include <chrono>
#include <cstdint>
#include <span>
#include <string>

#include "core/seeded_random.h"

namespace payorch {

// UTC milliseconds since the Unix epoch. Every time stored in the database is one of these.
using UnixMillis = std::int64_t;
using Millis = std::chrono::milliseconds;
// A reading of the monotonic clock: it never goes back and does not jump when the wall clock
// is set, so it measures durations and deadlines within one process. Never stored, never sent.
using MonotonicTime = std::chrono::steady_clock::time_point;

class Clock {
public:
  virtual ~Clock() = default;
  // Wall-clock time, UTC: what is stored and shown.
  virtual UnixMillis now_ms() const = 0;
  // Monotonic time: what durations (a vendor call's, a request's, uptime) and in-process
  // deadlines (a drain's, the commit mark's) are measured on.
  virtual MonotonicTime monotonic() const = 0;
};

// A clock that only moves when told to. For tests and the simulator. advance() moves both
// readings; set() steps the wall clock alone, as an operator or NTP would, and leaves monotonic
// time where it was.
class ManualClock final : public Clock {
public:
  explicit ManualClock(UnixMillis start = 1'700'000'000'000) : now_(start) {}
  UnixMillis now_ms() const override { return now_; }
  MonotonicTime monotonic() const override { return monotonic_; }
  // `d` must not be negative: monotonic time never goes back.
  void advance(Millis d);
  void set(UnixMillis t) { now_ = t; }

private:
  UnixMillis now_;
  MonotonicTime monotonic_{};
};

class Random {
public:
  virtual ~Random() = default;
  // Fills `out` with random bytes. Production uses a CSPRNG (client keys must be unguessable).
  virtual void fill(std::span<std::uint8_t> out) = 0;
};

// A fraction in [0, 1) drawn from `rng` (32 bits): the one source of backoff jitter.
double jitter(Random& rng);

// Deterministic bytes (one splitmix64 draw per byte) for tests; never used for production keys.
class SeededRandom final : public Random {
public:
  explicit SeededRandom(std::uint64_t seed) : mix_(seed) {}
  void fill(std::span<std::uint8_t> out) override;

private:
  SplitMix64 mix_;
};

// RFC 3339 UTC with millisecond precision: "2026-11-29T08:53:33.123Z".
std::string format_rfc3339(UnixMillis t);

}  // namespace payorch
