#pragma once
// splitmix64: payorch's one deterministic generator. Its output is the same on every platform
// and standard library (the standard distributions are not), so a seed replays the same run.
// The simulation's decisions, the chaos schedule and SeededRandom (the test double of the
// CSPRNG) all draw from it; production keys never do.
#include <cstdint>
#include <vector>

namespace payorch {

class SplitMix64 {
public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1), from the top 53 bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  bool chance(double p) { return unit() < p; }
  // Uniform in [lo, hi], both inclusive.
  std::int64_t between(std::int64_t lo, std::int64_t hi) {
    const auto span = static_cast<std::uint64_t>(hi - lo) + 1;
    return lo + static_cast<std::int64_t>(next() % span);
  }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[next() % v.size()];
  }

private:
  std::uint64_t state_;
};

}  // namespace payorch
