#include "core/duration.h"

#include <cstdint>
#include <string_view>
#include <utility>

namespace payorch {

std::string format_duration(Millis d) {
  static constexpr std::pair<std::int64_t, std::string_view> units[] = {
      {86'400'000, "d"}, {3'600'000, "h"}, {60'000, "m"}, {1'000, "s"}, {1, "ms"}};
  std::int64_t left = d.count();
  if (left <= 0) return std::to_string(left) + "ms";
  std::string out;
  for (const auto& [size, name] : units) {
    if (left >= size) out += std::to_string(left / size) + std::string(name);
    left %= size;
  }
  return out;
}

}  // namespace payorch
