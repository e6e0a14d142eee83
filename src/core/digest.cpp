#include "core/digest.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/hex.h"

namespace payorch {
namespace {

namespace json = boost::json;

// Integers up to 2^53 in magnitude are exactly the doubles ECMAScript prints digit for digit;
// beyond that an int64/uint64 is printed as the double it would become in JavaScript, which is
// what RFC 8785 (I-JSON numbers are IEEE 754 doubles) asks for.
constexpr std::uint64_t exact_integer_limit = std::uint64_t{1} << 53;

// The UTF-16 code units of a UTF-8 string, for RFC 8785 §3.2.3 member ordering. Strings that
// come from Boost.JSON's parser are valid UTF-8; should a programmatically built value carry
// an invalid byte anyway, it maps to 0xDC00 + byte (a lone low surrogate, as Python's
// "surrogateescape" does) so the order stays total and deterministic.
std::u16string utf16_units(std::string_view s) {
  std::u16string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    std::size_t len = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : (b0 >> 3) == 0x1E ? 4 : 0;
    char32_t cp = len == 1 ? b0 : len == 2 ? (b0 & 0x1Fu) : len == 3 ? (b0 & 0x0Fu) : (b0 & 0x07u);
    bool ok = len != 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      ok = (b & 0xC0) == 0x80;
      cp = (cp << 6) | (b & 0x3Fu);
    }
    if (!ok) {
      out.push_back(static_cast<char16_t>(0xDC00 + b0));
      ++i;
      continue;
    }
    if (cp >= 0x10000) {
      cp -= 0x10000;
      out.push_back(static_cast<char16_t>(0xD800 + (cp >> 10)));
      out.push_back(static_cast<char16_t>(0xDC00 + (cp & 0x3FF)));
    } else {
      out.push_back(static_cast<char16_t>(cp));
    }
    i += len;
  }
  return out;
}

// JSON.stringify's string form (RFC 8785 §3.2.2.2): the two mandatory escapes, the five
// short forms, \u00xx (lower-case hex) for the remaining C0 controls, everything else literal.
void append_string(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += "\\u00";
          out.push_back(hex[(static_cast<unsigned char>(c) >> 4) & 0xF]);
          out.push_back(hex[static_cast<unsigned char>(c) & 0xF]);
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

// ECMAScript Number::toString(x) (ECMA-262 §6.1.6.1.20), as RFC 8785 §3.2.2.3 requires.
// std::to_chars without a precision gives the shortest digits that round-trip, nearest to x —
// the digits s and count k of the ES algorithm; n is the decimal exponent plus one.
void append_number(std::string& out, double x) {
  if (!std::isfinite(x)) throw std::invalid_argument("JCS: NaN and Infinity are not JSON numbers");
  if (x == 0) {  // +0 and -0 both print as "0"
    out.push_back('0');
    return;
  }
  if (x < 0) {
    out.push_back('-');
    x = -x;
  }
  std::array<char, 64> buf{};
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), x, std::chars_format::scientific);
  if (ec != std::errc{}) throw std::logic_error("JCS: to_chars failed");
  std::string_view sci(buf.data(), static_cast<std::size_t>(end - buf.data()));  // "d.ddde+XX"
  const std::size_t e_pos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_pos))
    if (c != '.') digits.push_back(c);
  int exp10 = 0;
  std::string_view exp_text = sci.substr(e_pos + 1);
  if (exp_text.front() == '+') exp_text.remove_prefix(1);
  std::from_chars(exp_text.data(), exp_text.data() + exp_text.size(), exp10);

  const int k = static_cast<int>(digits.size());
  const int n = exp10 + 1;
  if (k <= n && n <= 21) {
    out += digits;
    out.append(static_cast<std::size_t>(n - k), '0');
  } else if (0 < n && n <= 21) {
    out.append(digits, 0, static_cast<std::size_t>(n));
    out.push_back('.');
    out.append(digits, static_cast<std::size_t>(n));
  } else if (-6 < n && n <= 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-n), '0');
    out += digits;
  } else {
    out.push_back(digits[0]);
    if (k > 1) {
      out.push_back('.');
      out.append(digits, 1);
    }
    out.push_back('e');
    out.push_back(n - 1 < 0 ? '-' : '+');
    out += std::to_string(n - 1 < 0 ? 1 - n : n - 1);
  }
}

void append_value(std::string& out, const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: out += "null"; return;
    case json::kind::bool_: out += v.get_bool() ? "true" : "false"; return;
    case json::kind::int64: {
      const std::int64_t i = v.get_int64();
      const std::uint64_t magnitude = i < 0 ? 0 - static_cast<std::uint64_t>(i) : static_cast<std::uint64_t>(i);
      if (magnitude <= exact_integer_limit) out += std::to_string(i);
      else append_number(out, static_cast<double>(i));
      return;
    }
    case json::kind::uint64: {
      const std::uint64_t u = v.get_uint64();
      if (u <= exact_integer_limit) out += std::to_string(u);
      else append_number(out, static_cast<double>(u));
      return;
    }
    case json::kind::double_: append_number(out, v.get_double()); return;
    case json::kind::string: append_string(out, v.get_string()); return;
    case json::kind::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& e : v.get_array()) {
        if (!first) out.push_back(',');
        first = false;
        append_value(out, e);
      }
      out.push_back(']');
      return;
    }
    case json::kind::object: {
      const auto& obj = v.get_object();
      std::vector<std::pair<std::u16string, const json::key_value_pair*>> members;
      members.reserve(obj.size());
      for (const auto& kv : obj) members.emplace_back(utf16_units(kv.key()), &kv);
      std::sort(members.begin(), members.end(),
                [](const auto& a, const auto& b) { return a.first < b.first; });
      out.push_back('{');
      bool first = true;
      for (const auto& [units, kv] : members) {
        if (!first) out.push_back(',');
        first = false;
        append_string(out, kv->key());
        out.push_back(':');
        append_value(out, kv->value());
      }
      out.push_back('}');
      return;
    }
  }
}

}  // namespace

// Serialises exactly the doubles it is given. Note that Boost 1.81's parser is not correctly
// rounded for every decimal (it can land one ulp off), so a non-integer read by boost::json::parse
// may canonicalise differently than in another implementation; no digest covers one (amounts are
// integers, the rest are strings).
std::string jcs_canonicalize(const boost::json::value& v) {
  std::string out;
  append_value(out, v);
  return out;
}

std::string sha256_hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int md_len = 0;
  if (EVP_Digest(data.data(), data.size(), md.data(), &md_len, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("sha256: EVP_Digest failed");  // only on allocation failure
  return lower_hex(std::span(md.data(), md_len));
}

boost::json::object digest_fields(const Intent& intent) {
  boost::json::object o;
  o["operation_type"] = intent.operation_type;
  o["amount_minor"] = intent.amount_minor;
  o["currency"] = intent.currency;
  o["payee"] = intent.payee;
  o["source"] = intent.source;
  if (intent.provider) o["provider"] = *intent.provider;
  return o;
}

std::string request_digest(const Intent& intent) {
  return "sha256:" + sha256_hex(jcs_canonicalize(digest_fields(intent)));
}

boost::json::object refund_digest_fields(std::string_view payment_id, std::int64_t amount_minor) {
  boost::json::object o;
  o["operation_type"] = "refund";
  o["payment_id"] = payment_id;
  o["amount_minor"] = amount_minor;
  return o;
}

std::string refund_request_digest(std::string_view payment_id, std::int64_t amount_minor) {
  return "sha256:" + sha256_hex(jcs_canonicalize(refund_digest_fields(payment_id, amount_minor)));
}

}  // namespace payorch
