#include "core/clock.h"

#include <cstdio>
#include <ctime>

#include "core/expect.h"

namespace payorch {

void ManualClock::advance(Millis d) {
  if (d.count() < 0) broken_belief("a ManualClock never goes back", __FILE__, __LINE__);
  now_ += d.count();
  monotonic_ += d;
}

void SeededRandom::fill(std::span<std::uint8_t> out) {
  for (auto& b : out) b = static_cast<std::uint8_t>(mix_.next());
}

double jitter(Random& rng) {
  std::uint8_t b[4];
  rng.fill(b);
  const std::uint32_t v = (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) |
                          (std::uint32_t{b[2]} << 8) | b[3];
  return static_cast<double>(v) / 4294967296.0;
}

std::string format_rfc3339(UnixMillis t) {
  std::time_t secs = static_cast<std::time_t>(t >= 0 ? t / 1000 : (t - 999) / 1000);
  int ms = static_cast<int>(t - static_cast<UnixMillis>(secs) * 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  return buf;
}

}  // namespace payorch
