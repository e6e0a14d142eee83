#include "providers/alipay/gateway.h"

#include <boost/json/value.hpp>

#include <cstdio>
#include <variant>

#include "core/strict_json.h"
#include "providers/rsa_sha256.h"

namespace payorch::providers::alipay {
namespace {

namespace json = boost::json;

bool unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

void append_encoded(std::string& out, std::string_view text) {
  static constexpr char hex[] = "0123456789ABCDEF";
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (unreserved(c)) {
      out += ch;
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 0x0f];
    }
  }
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> decode_component(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '+') {
      out += ' ';
    } else if (c == '%') {
      if (i + 2 >= text.size()) return std::nullopt;
      const int hi = hex_value(text[i + 1]);
      const int lo = hex_value(text[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

// Skips a JSON string starting at body[i] == '"'; the index after its closing quote, or npos.
std::size_t skip_string(std::string_view body, std::size_t i) {
  for (++i; i < body.size(); ++i) {
    if (body[i] == '\\') {
      ++i;
    } else if (body[i] == '"') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

std::size_t skip_space(std::string_view body, std::size_t i) {
  while (i < body.size() && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n' || body[i] == '\r'))
    ++i;
  return i;
}

// The end of the JSON value starting at body[i] (objects, arrays, strings and scalars).
std::size_t skip_value(std::string_view body, std::size_t i) {
  if (i >= body.size()) return std::string_view::npos;
  if (body[i] == '"') return skip_string(body, i);
  if (body[i] == '{' || body[i] == '[') {
    int depth = 0;
    while (i < body.size()) {
      const char c = body[i];
      if (c == '"') {
        i = skip_string(body, i);
        if (i == std::string_view::npos) return i;
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') {
        if (--depth == 0) return i + 1;
      }
      ++i;
    }
    return std::string_view::npos;
  }
  while (i < body.size() && body[i] != ',' && body[i] != '}' && body[i] != ']' && body[i] != ' ' &&
         body[i] != '\n' && body[i] != '\r' && body[i] != '\t')
    ++i;
  return i;
}

std::string string_or_empty(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

}  // namespace

std::string signing_content(const Params& params, bool drop_sign_type, bool keep_empty) {
  std::string out;
  for (const auto& [key, value] : params) {
    if (key == "sign" || (drop_sign_type && key == "sign_type") || (value.empty() && !keep_empty)) continue;
    if (!out.empty()) out += '&';
    out += key;
    out += '=';
    out += value;
  }
  return out;
}

std::string form_encode(const Params& params) {
  std::string out;
  for (const auto& [key, value] : params) {
    if (!out.empty()) out += '&';
    append_encoded(out, key);
    out += '=';
    append_encoded(out, value);
  }
  return out;
}

std::optional<Params> form_decode(std::string_view body) {
  Params out;
  while (!body.empty()) {
    const std::size_t amp = body.find('&');
    const std::string_view pair = body.substr(0, amp);
    body = amp == std::string_view::npos ? std::string_view() : body.substr(amp + 1);
    if (pair.empty()) continue;
    const std::size_t eq = pair.find('=');
    auto key = decode_component(pair.substr(0, eq));
    auto value = decode_component(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
    if (!key || !value || key->empty()) return std::nullopt;
    if (!out.emplace(std::move(*key), std::move(*value)).second) return std::nullopt;
  }
  return out;
}

std::string gateway_timestamp(std::int64_t unix_s) {
  const std::int64_t local = unix_s + 8 * 3600;  // China Standard Time, no daylight saving
  std::int64_t days = local / 86400;
  std::int64_t secs = local % 86400;
  if (secs < 0) {
    secs += 86400;
    --days;
  }
  // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
  days += 719468;
  const std::int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const std::int64_t doe = days - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  const std::int64_t d = doy - (153 * mp + 2) / 5 + 1;
  const std::int64_t m = mp < 10 ? mp + 3 : mp - 9;
  const std::int64_t y = yoe + era * 400 + (m <= 2 ? 1 : 0);
  char out[96];
  std::snprintf(out, sizeof out, "%04lld-%02lld-%02lld %02lld:%02lld:%02lld",
                static_cast<long long>(y), static_cast<long long>(m), static_cast<long long>(d),
                static_cast<long long>(secs / 3600), static_cast<long long>(secs / 60 % 60),
                static_cast<long long>(secs % 60));
  return out;
}

std::string yuan_text(std::int64_t minor) {
  const std::string cents = std::to_string(minor % 100);
  return std::to_string(minor / 100) + "." + (cents.size() == 1 ? "0" + cents : cents);
}

std::optional<std::int64_t> minor_of_yuan(std::string_view text) {
  const std::size_t dot = text.find('.');
  const std::string_view whole = text.substr(0, dot);
  const std::string_view fraction = dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
  if (whole.empty() || whole.size() > 15 || (dot != std::string_view::npos && (fraction.empty() || fraction.size() > 2)))
    return std::nullopt;
  std::int64_t value = 0;
  for (const char c : whole) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  std::int64_t cents = 0;
  for (std::size_t i = 0; i < 2; ++i) {
    const char c = i < fraction.size() ? fraction[i] : '0';
    if (c < '0' || c > '9') return std::nullopt;
    cents = cents * 10 + (c - '0');
  }
  return value * 100 + cents;
}

std::optional<std::string_view> member_text(std::string_view body, std::string_view key) {
  std::size_t i = skip_space(body, 0);
  if (i >= body.size() || body[i] != '{') return std::nullopt;
  i = skip_space(body, i + 1);
  while (i < body.size() && body[i] == '"') {
    const std::size_t name_end = skip_string(body, i);
    if (name_end == std::string_view::npos) return std::nullopt;
    const std::string_view name = body.substr(i + 1, name_end - i - 2);
    i = skip_space(body, name_end);
    if (i >= body.size() || body[i] != ':') return std::nullopt;
    const std::size_t value_start = skip_space(body, i + 1);
    const std::size_t value_end = skip_value(body, value_start);
    if (value_end == std::string_view::npos) return std::nullopt;
    if (name == key) return body.substr(value_start, value_end - value_start);
    i = skip_space(body, value_end);
    if (i < body.size() && body[i] == ',') i = skip_space(body, i + 1);
  }
  return std::nullopt;
}

std::string response_key(std::string_view method) {
  std::string key(method);
  for (char& c : key)
    if (c == '.') c = '_';
  return key + "_response";
}

std::optional<Answer> read_answer(const std::string& body, std::string_view method,
                                  const std::string& alipay_public_key, std::string& why) {
  auto parsed = parse_strict_json(body);
  if (auto* e = std::get_if<StrictJsonError>(&parsed)) {
    why = "answer is not JSON: " + e->message;
    return std::nullopt;
  }
  const json::value& root = std::get<StrictJson>(parsed).root;
  const json::object* o = root.if_object();
  const std::string key = response_key(method);
  const json::value* response = o ? o->if_contains(key) : nullptr;
  if (!response || !response->is_object()) {
    why = o && o->contains("error_response") ? "answer is an error_response" : "answer has no " + key;
    return std::nullopt;
  }
  const json::value* sign = o->if_contains("sign");
  const auto text = member_text(body, key);
  if (!sign || !sign->is_string() || !text) {
    why = "answer is not signed";
    return std::nullopt;
  }
  if (!rsa_sha256_verify_base64(alipay_public_key, *text, sign->get_string())) {
    why = "answer's signature does not verify with the Alipay public key";
    return std::nullopt;
  }
  Answer a;
  a.response = response->get_object();
  a.code = string_or_empty(a.response, "code");
  a.sub_code = string_or_empty(a.response, "sub_code");
  a.said = "code " + a.code + (a.sub_code.empty() ? "" : " sub_code " + a.sub_code);
  if (const std::string sub_msg = string_or_empty(a.response, "sub_msg"); !sub_msg.empty())
    a.said += " (" + sub_msg + ")";
  return a;
}

}  // namespace payorch::providers::alipay
