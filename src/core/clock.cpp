#include "core/clock.h"

#include <cstdio>
#include <ctime>

namespace payorch {

void SeededRandom::fill(std::span<std::uint8_t> out) {
  for (auto& b : out) {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    b = static_cast<std::uint8_t>(z ^ (z >> 31));
  }
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
