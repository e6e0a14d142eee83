#include "vendor_sim/charge.h"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>

#include "vendor_sim/signature.h"

namespace payorch::vendor_sim {
namespace {

namespace json = boost::json;

constexpr std::int64_t max_amount_minor = (std::int64_t{1} << 53) - 1;
constexpr std::size_t max_key_chars = 255;
// The longest payee or source, in bytes: the same bound as payorch's intake, so that every
// payment payorch accepts can be charged here (tests/vendor_sim/charge_test.cpp checks both).
constexpr std::size_t max_text_chars = 255;

bool visible_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

// A required non-empty string member, at most max_text_chars long.
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

}  // namespace

std::optional<ChargeParams> parse_charge_request(std::string_view idempotency_key,
                                                 std::string_view body, std::string& error) {
  if (idempotency_key.empty() || idempotency_key.size() > max_key_chars ||
      !visible_ascii(idempotency_key)) {
    error = "Idempotency-Key must be 1-255 visible ASCII characters";
    return std::nullopt;
  }
  boost::system::error_code ec;
  const json::value v = json::parse(body, ec);
  const json::object* o = ec ? nullptr : v.if_object();
  if (!o) {
    error = "the body must be a JSON object";
    return std::nullopt;
  }
  ChargeParams p;
  // Boost.JSON parses every integer that fits as int64; a float (even 100.0), a string or a
  // number beyond int64 is some other kind and is refused, never rounded.
  const json::value* amount = o->if_contains("amount_minor");
  if (!amount || !amount->is_int64() || amount->as_int64() < 1 ||
      amount->as_int64() > max_amount_minor) {
    error = "amount_minor must be an integer between 1 and 2^53-1";
    return std::nullopt;
  }
  p.amount_minor = amount->as_int64();
  if (!text_member(*o, "currency", p.currency, error) ||
      !text_member(*o, "payee", p.payee, error) || !text_member(*o, "source", p.source, error) ||
      !text_member(*o, "reference", p.reference, error))
    return std::nullopt;
  if (p.currency.size() != 3 ||
      !std::all_of(p.currency.begin(), p.currency.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
    error = "currency must be three upper-case letters";
    return std::nullopt;
  }
  if (p.reference != idempotency_key) {
    error = "reference must equal the Idempotency-Key";
    return std::nullopt;
  }
  return p;
}

// The RFC 8785 (JCS) form of the five fields is written directly: the members in code-unit
// order, no whitespace. Boost.JSON writes a string as JCS does (\" and \\, the short forms
// \b \f \n \r \t, \u00xx in lower-case hex for the other controls, every other byte as is),
// and amount_minor, an integer below 2^53, prints as its digits.
std::string request_hash(const ChargeParams& p) {
  json::object o;  // inserted in sorted order, serialized in insertion order
  o["amount_minor"] = p.amount_minor;
  o["currency"] = p.currency;
  o["payee"] = p.payee;
  o["reference"] = p.reference;
  o["source"] = p.source;
  return sha256_hex(json::serialize(o));
}

std::string_view to_string(ChargeStatus s) {
  switch (s) {
    case ChargeStatus::succeeded: return "succeeded";
    case ChargeStatus::declined: return "declined";
    case ChargeStatus::pending: return "pending";
  }
  return "unknown";
}

std::optional<ChargeStatus> parse_charge_status(std::string_view s) {
  for (ChargeStatus c : {ChargeStatus::succeeded, ChargeStatus::declined, ChargeStatus::pending})
    if (to_string(c) == s) return c;
  return std::nullopt;
}

Outcome decide_outcome(std::string_view source) {
  if (source == "tok_ok") return {ChargeStatus::succeeded, std::nullopt};
  if (source == "tok_decline") return {ChargeStatus::declined, "insufficient_funds"};
  if (source == "tok_pending") return {ChargeStatus::pending, std::nullopt};
  return {ChargeStatus::declined, "invalid_source"};
}

json::object charge_json(const Charge& c) {
  json::object o;
  o["id"] = c.id;
  o["reference"] = c.params.reference;
  o["status"] = to_string(c.status);
  o["amount_minor"] = c.params.amount_minor;
  o["currency"] = c.params.currency;
  o["payee"] = c.params.payee;
  o["decline_code"] = c.decline_code ? json::value(*c.decline_code) : json::value(nullptr);
  return o;
}

json::object ledger_json(const Charge& c) {
  json::object o = charge_json(c);
  o["source"] = c.params.source;
  o["created_at"] = c.created_at;
  o["updated_at"] = c.updated_at;
  o["key_expires_at"] = c.key_expires_at;
  return o;
}

std::string event_type(ChargeStatus s) { return "charge." + std::string(to_string(s)); }

std::string callback_body(std::string_view event_id, ChargeStatus status,
                          std::int64_t created_unix_s, const Charge& c) {
  json::object o;
  o["id"] = event_id;
  o["type"] = event_type(status);
  o["created"] = created_unix_s;
  o["data"] = charge_json(c);
  return json::serialize(o);
}

json::object error_json(std::string_view type) {
  json::object inner;
  inner["type"] = type;
  json::object o;
  o["error"] = std::move(inner);
  return o;
}

}  // namespace payorch::vendor_sim
