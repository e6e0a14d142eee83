#include "http/request_fields.h"

#include <algorithm>
#include <charconv>

namespace payorch::http {

int preferred_wait(std::string_view prefer) {
  while (!prefer.empty()) {
    auto comma = prefer.find(',');
    std::string_view item = prefer.substr(0, comma);
    prefer = comma == std::string_view::npos ? std::string_view{} : prefer.substr(comma + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.starts_with("wait=")) continue;
    item.remove_prefix(5);
    int n = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
    if (ec != std::errc() || ptr != item.data() + item.size() || n < 0) return 0;
    return std::min(n, max_wait_s);
  }
  return 0;
}

bool json_content_type(std::string_view ct) {
  auto semi = ct.find(';');
  std::string_view media = ct.substr(0, semi);
  while (!media.empty() && media.back() == ' ') media.remove_suffix(1);
  if (media.size() != 16) return false;
  for (std::size_t i = 0; i < media.size(); ++i) {
    char c = media[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != "application/json"[i]) return false;
  }
  return true;
}

namespace {

// A whole decimal integer in [min, max]; nullopt for anything else ("", "5x", "+5", "1e2").
template <class Int>
std::optional<Int> whole_number(const std::string& value, Int min, Int max) {
  Int n = 0;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || ptr != value.data() + value.size() || n < min || n > max) return std::nullopt;
  return n;
}

}  // namespace

PaymentsQuery parse_payments_query(boost::urls::params_view query) {
  PaymentsQuery q;
  for (auto param : query) {
    std::string key = param.key;
    std::string value = param.has_value ? std::string(param.value) : std::string();
    if (key == "state") {
      q.state = parse_payment_state(value);
      if (!q.state)
        q.errors.push_back({"state", "invalid_format", "state must be PROCESSING, UNKNOWN, SUCCEEDED or FAILED_FINAL"});
    } else if (key == "limit") {
      if (auto n = whole_number(value, 1, 200)) q.limit = *n;
      else q.errors.push_back({"limit", "out_of_range", "limit must be an integer from 1 to 200"});
    } else if (key == "cursor") {
      if (value.size() != 30 || !value.starts_with("pay_"))
        q.errors.push_back({"cursor", "invalid_format", "cursor must be a next_cursor value from a previous page"});
      else
        q.cursor = value;
    } else {
      q.errors.push_back({key, "unknown_field", "unknown query parameter"});
    }
  }
  return q;
}

EventsQuery parse_events_query(boost::urls::params_view query) {
  EventsQuery q;
  for (auto param : query) {
    std::string key = param.key;
    std::string value = param.has_value ? std::string(param.value) : std::string();
    if (key == "after") {
      if (auto n = whole_number<std::int64_t>(value, 0, INT64_MAX)) q.after = *n;
      else q.errors.push_back({"after", "invalid_format", "after must be a next_cursor value from a previous page"});
    } else if (key == "limit") {
      if (auto n = whole_number(value, 1, 200)) q.limit = *n;
      else q.errors.push_back({"limit", "out_of_range", "limit must be an integer from 1 to 200"});
    } else {
      q.errors.push_back({key, "unknown_field", "unknown query parameter"});
    }
  }
  return q;
}

}  // namespace payorch::http
