#include "vendor_sim/charge.h"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "vendor_sim/fields.h"
#include "vendor_sim/signature.h"

namespace payorch::vendor_sim {
namespace {

namespace json = boost::json;

}  // namespace

std::optional<ChargeParams> parse_charge_request(std::string_view idempotency_key,
                                                 std::string_view body, std::string& error) {
  if (!valid_idempotency_key(idempotency_key, error)) return std::nullopt;
  json::value storage;
  const json::object* o = parse_object(body, storage, error);
  if (!o) return std::nullopt;
  ChargeParams p;
  if (!amount_member(*o, p.amount_minor, error) || !currency_member(*o, p.currency, error) ||
      !text_member(*o, "payee", p.payee, error) || !text_member(*o, "source", p.source, error) ||
      !reference_member(*o, idempotency_key, p.reference, error))
    return std::nullopt;
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

std::string event_body(std::string_view event_id, std::string_view type,
                       std::int64_t created_unix_s, json::object data) {
  json::object o;
  o["id"] = event_id;
  o["type"] = type;
  o["created"] = created_unix_s;
  o["data"] = std::move(data);
  return json::serialize(o);
}

std::string callback_body(std::string_view event_id, ChargeStatus status,
                          std::int64_t created_unix_s, const Charge& c) {
  return event_body(event_id, event_type(status), created_unix_s, charge_json(c));
}

json::object error_json(std::string_view type) {
  json::object inner;
  inner["type"] = type;
  json::object o;
  o["error"] = std::move(inner);
  return o;
}

}  // namespace payorch::vendor_sim
