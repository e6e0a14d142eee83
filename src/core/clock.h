#pragma once
// Time and randomness are injected: no logic in payorch reads the system clock or the
// system RNG directly, so tests drive leases, backoff and ids with a manual clock and a
// seeded generator.
#include <chrono>
#include <cstdint>
#include <span>
#include <string>

#include "core/seeded_random.h"

namespace payorch {

// UTC milliseconds since the Unix epoch. Every time stored in the database is one of these.
using UnixMillis = std::int64_t;
using Millis = std::chrono::milliseconds;

class Clock {
public:
  virtual ~Clock() = default;
  // Wall-clock time, UTC.
  virtual UnixMillis now_ms() const = 0;
};

// A clock that only moves when told to. For tests and the simulator.
class ManualClock final : public Clock {
public:
  explicit ManualClock(UnixMillis start = 1'700'000'000'000) : now_(start) {}
  UnixMillis now_ms() const override { return now_; }
  void advance(Millis d) { now_ += d.count(); }
  void set(UnixMillis t) { now_ = t; }

private:
  UnixMillis now_;
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
