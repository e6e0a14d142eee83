#include "vendor_sim/fields.h"

#include <boost/json/parse.hpp>

#include <algorithm>

namespace payorch::vendor_sim {
namespace {

namespace json = boost::json;

constexpr std::int64_t max_amount_minor = (std::int64_t{1} << 53) - 1;
constexpr std::size_t max_key_chars = 255;

bool visible_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

}  // namespace

bool valid_idempotency_key(std::string_view key, std::string& error) {
  if (key.empty() || key.size() > max_key_chars || !visible_ascii(key)) {
    error = "Idempotency-Key must be 1-255 visible ASCII characters";
    return false;
  }
  return true;
}

const json::object* parse_object(std::string_view body, json::value& storage, std::string& error) {
  boost::system::error_code ec;
  storage = json::parse(body, ec);
  const json::object* o = ec ? nullptr : storage.if_object();
  if (!o) error = "the body must be a JSON object";
  return o;
}

bool amount_member(const json::object& o, std::int64_t& out, std::string& error) {
  // Boost.JSON parses every integer that fits as int64; anything else is another kind.
  const json::value* amount = o.if_contains("amount_minor");
  if (!amount || !amount->is_int64() || amount->as_int64() < 1 ||
      amount->as_int64() > max_amount_minor) {
    error = "amount_minor must be an integer between 1 and 2^53-1";
    return false;
  }
  out = amount->as_int64();
  return true;
}

bool text_member(const json::object& o, std::string_view key, std::string& out,
                 std::string& error) {
  const json::value* v = o.if_contains(key);
  const json::string* s = v ? v->if_string() : nullptr;
  if (!s || s->empty() || s->size() > max_text_chars) {
    error = std::string(key) + " must be a non-empty string of at most " + std::to_string(max_text_chars) + " bytes";
    return false;
  }
  out = std::string(*s);
  return true;
}

bool currency_member(const json::object& o, std::string& out, std::string& error) {
  if (!text_member(o, "currency", out, error)) return false;
  if (out.size() != 3 || !std::all_of(out.begin(), out.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
    error = "currency must be three upper-case letters";
    return false;
  }
  return true;
}

bool reference_member(const json::object& o, std::string_view idempotency_key, std::string& out,
                      std::string& error) {
  if (!text_member(o, "reference", out, error)) return false;
  if (out != idempotency_key) {
    error = "reference must equal the Idempotency-Key";
    return false;
  }
  return true;
}

}  // namespace payorch::vendor_sim
