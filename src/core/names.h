#pragma once
// Name and id syntax, the one home. Names that an operator chooses (tenant ids, provider names,
// node ids) are 1-64 characters of [a-z0-9_-]: they go into URLs, metric labels and log lines
// unquoted, and lower case only, so two spellings never name two things. Ids that payorch hands
// out (pay_…, re_…, rc_…, evt_…: a prefix and a ULID in upper case) and the other tokens that
// go into a URL path are [A-Za-z0-9_-].
#include <algorithm>
#include <cstddef>
#include <string_view>

namespace payorch {

constexpr std::size_t max_name_length = 64;

constexpr bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

constexpr bool is_id_char(char c) { return is_name_char(c) || (c >= 'A' && c <= 'Z'); }

// [a-z0-9_-]{1,64}
constexpr bool is_name(std::string_view s) {
  return !s.empty() && s.size() <= max_name_length && std::all_of(s.begin(), s.end(), is_name_char);
}

// [A-Za-z0-9_-]{1,max_length}
constexpr bool is_id_text(std::string_view s, std::size_t max_length) {
  return !s.empty() && s.size() <= max_length && std::all_of(s.begin(), s.end(), is_id_char);
}

}  // namespace payorch
