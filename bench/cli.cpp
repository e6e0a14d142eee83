#include "bench/cli.h"

#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "config/config.h"

namespace payorch::bench {

std::int64_t parse_positive(const std::string& flag, const std::string& text, std::int64_t max) {
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || v < 1 || v > max)
    throw std::invalid_argument(flag + " expects an integer in 1.." + std::to_string(max) +
                                ", got \"" + text + "\"");
  return v;
}

std::vector<std::string> parse_list(const std::string& flag, const std::string& text) {
  std::vector<std::string> items;
  std::size_t at = 0;
  for (;;) {
    const std::size_t comma = text.find(',', at);
    std::string item = text.substr(at, comma == std::string::npos ? comma : comma - at);
    if (item.empty()) throw std::invalid_argument(flag + ": empty item in \"" + text + "\"");
    items.push_back(std::move(item));
    if (comma == std::string::npos) return items;
    at = comma + 1;
  }
}

std::chrono::milliseconds parse_duration_flag(const std::string& flag, const std::string& text) {
  const auto d = config::parse_duration(text);
  if (!d) throw std::invalid_argument(flag + ": expected a duration like 250ms, 2s, 5m, 24h; got \"" + text + "\"");
  return *d;
}

bool asks_for_help(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--help") return true;
  return false;
}

std::string default_work_dir() {
  const char* tmpdir = std::getenv("TMPDIR");
  return tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
}

}  // namespace payorch::bench
