#include "http/request_fields.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>

#include "core/ascii.h"

namespace payorch::http {

namespace {

// RFC 9110 tchar.
bool token_char(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The elements of one field line's comma-separated list; a comma inside a quoted string belongs
// to the string.
std::vector<std::string_view> list_elements(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (quoted) {
      if (line[i] == '\\') ++i;
      else if (line[i] == '"') quoted = false;
    } else if (line[i] == '"') {
      quoted = true;
    } else if (line[i] == ',') {
      out.push_back(line.substr(start, i - start));
      start = i + 1;
    }
  }
  out.push_back(line.substr(start));
  return out;
}

// A word (token or quoted-string) at the start of `s`, unquoted; `s` keeps what follows it.
std::optional<std::string> take_word(std::string_view& s) {
  if (s.empty() || s.front() != '"') {
    std::size_t n = 0;
    while (n < s.size() && token_char(s[n])) ++n;
    if (n == 0) return std::nullopt;
    std::string word(s.substr(0, n));
    s.remove_prefix(n);
    return word;
  }
  std::string word;
  for (std::size_t i = 1; i < s.size(); ++i) {
    if (s[i] == '"') {
      s.remove_prefix(i + 1);
      return word;
    }
    if (s[i] == '\\' && ++i == s.size()) break;
    word += s[i];
  }
  return std::nullopt;  // unterminated
}

// The `wait` preference in one Prefer field line: nullopt when the line has none; its seconds
// (capped) when the first one is well formed, else 0. RFC 7240: preference = token [ BWS "="
// BWS word ] *( OWS ";" [ OWS parameter ] ), the name case-insensitive, the value delta-seconds.
std::optional<int> wait_in_line(std::string_view line) {
  for (std::string_view element : list_elements(line)) {
    element = trim_ows(element);
    std::size_t n = 0;
    while (n < element.size() && token_char(element[n])) ++n;
    if (!ascii_iequals(element.substr(0, n), "wait")) continue;
    // The first `wait` counts (RFC 7240 §2), well formed or not.
    std::string_view rest = trim_ows(element.substr(n));
    if (!rest.starts_with('=')) return 0;
    rest = trim_ows(rest.substr(1));
    const std::optional<std::string> value = take_word(rest);
    rest = trim_ows(rest);
    if (!value || value->empty() || !(rest.empty() || rest.starts_with(';'))) return 0;
    int seconds = 0;
    for (char c : *value) {
      if (c < '0' || c > '9') return 0;
      // However long a wait is asked for, it is the longest one.
      seconds = std::min(seconds * 10 + (c - '0'), max_wait_s);
    }
    return seconds;
  }
  return std::nullopt;
}

}  // namespace

int preferred_wait(std::string_view prefer) { return wait_in_line(prefer).value_or(0); }

int preferred_wait(const std::vector<std::string_view>& prefer_lines) {
  for (std::string_view line : prefer_lines)
    if (std::optional<int> wait = wait_in_line(line)) return *wait;
  return 0;
}

std::string media_type(std::string_view content_type) {
  std::string_view media = content_type.substr(0, content_type.find(';'));
  while (!media.empty() && media.back() == ' ') media.remove_suffix(1);
  return ascii_lower(media);
}

bool json_content_type(std::string_view ct) { return media_type(ct) == "application/json"; }

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

std::vector<FieldError> repeated_query_parameters(boost::urls::params_view query) {
  std::vector<FieldError> errors;
  std::set<std::string> seen;
  std::set<std::string> reported;
  for (auto param : query) {
    std::string key = param.key;
    if (seen.insert(key).second || !reported.insert(key).second) continue;
    errors.push_back({key, "repeated", "the query parameter " + key + " may be given only once"});
  }
  return errors;
}

PageQuery parse_list_query(boost::urls::params_view query, const ListSpec& spec,
                           std::vector<FieldError>& errors,
                           const std::function<bool(std::string_view key, const std::string& value)>& filter) {
  PageQuery page;
  std::optional<std::string> cursor_key;  // which of cursor / after was given
  for (auto param : query) {
    const std::string key = param.key;
    const std::string value = param.has_value ? std::string(param.value) : std::string();
    if (key == "limit") {
      if (auto n = whole_number(value, 1, 200)) page.limit = *n;
      else errors.push_back({key, "out_of_range", "limit must be an integer from 1 to 200"});
    } else if (key == "cursor" || (spec.after_alias && key == "after")) {
      if (cursor_key && *cursor_key != key) {
        errors.push_back({key, "conflict", "give cursor or after, not both (after is an alias of cursor)"});
        continue;
      }
      cursor_key = key;
      if (spec.valid_cursor(value)) page.cursor = value;
      else errors.push_back({key, "invalid_format", key + " must be a next_cursor value from a previous page"});
    } else if (!filter(key, value)) {
      errors.push_back({key, "unknown_field", "unknown query parameter"});
    }
  }
  return page;
}

PaymentsQuery parse_payments_query(boost::urls::params_view query) {
  PaymentsQuery q;
  auto payment_cursor = [](std::string_view v) { return v.size() == 30 && v.starts_with("pay_"); };
  q.page = parse_list_query(query, {payment_cursor}, q.errors, [&q](std::string_view key, const std::string& value) {
    if (key != "state") return false;
    q.state = parse_payment_state(value);
    if (!q.state)
      q.errors.push_back({"state", "invalid_format", "state must be PROCESSING, UNKNOWN, SUCCEEDED or FAILED_FINAL"});
    return true;
  });
  return q;
}

EventsQuery parse_events_query(boost::urls::params_view query) {
  EventsQuery q;
  auto feed_position = [](std::string_view v) {
    return whole_number<std::int64_t>(std::string(v), 0, INT64_MAX).has_value();
  };
  const PageQuery page = parse_list_query(query, {feed_position, true}, q.errors,
                                          [](std::string_view, const std::string&) { return false; });
  q.limit = page.limit;
  if (page.cursor) q.after = *whole_number<std::int64_t>(*page.cursor, 0, INT64_MAX);
  return q;
}

}  // namespace payorch::http
