#include "vendor_sim/refund.h"

#include <boost/json/serialize.hpp>

#include "vendor_sim/fields.h"
#include "vendor_sim/signature.h"

namespace payorch::vendor_sim {
namespace {

namespace json = boost::json;

}  // namespace

std::optional<RefundParams> parse_refund_request(std::string_view idempotency_key,
                                                 std::string_view body, std::string& error) {
  if (!valid_idempotency_key(idempotency_key, error)) return std::nullopt;
  json::value storage;
  const json::object* o = parse_object(body, storage, error);
  if (!o) return std::nullopt;
  RefundParams p;
  if (!text_member(*o, "charge", p.charge, error) || !amount_member(*o, p.amount_minor, error) ||
      !currency_member(*o, p.currency, error) ||
      !reference_member(*o, idempotency_key, p.reference, error))
    return std::nullopt;
  return p;
}

// Written in RFC 8785 form directly, as request_hash(ChargeParams) is: members in code-unit order.
std::string request_hash(const RefundParams& p) {
  json::object o;
  o["amount_minor"] = p.amount_minor;
  o["charge"] = p.charge;
  o["currency"] = p.currency;
  o["reference"] = p.reference;
  return sha256_hex(json::serialize(o));
}

std::int64_t unrefunded_minor(const Charge& charge, std::int64_t succeeded_and_pending_minor) {
  return charge.params.amount_minor - succeeded_and_pending_minor;
}

Outcome decide_refund(const Charge& charge, std::int64_t succeeded_and_pending_minor,
                      std::int64_t amount_minor) {
  if (charge.status != ChargeStatus::succeeded)
    return {ChargeStatus::declined, "charge_not_refundable"};
  if (amount_minor > unrefunded_minor(charge, succeeded_and_pending_minor))
    return {ChargeStatus::declined, "exceeds_charge"};
  if (charge.params.source == "tok_pending") return {ChargeStatus::pending, std::nullopt};
  return {ChargeStatus::succeeded, std::nullopt};
}

json::object refund_json(const Refund& r) {
  json::object o;
  o["id"] = r.id;
  o["reference"] = r.params.reference;
  o["charge"] = r.params.charge;
  o["status"] = to_string(r.status);
  o["amount_minor"] = r.params.amount_minor;
  o["currency"] = r.params.currency;
  o["decline_code"] = r.decline_code ? json::value(*r.decline_code) : json::value(nullptr);
  return o;
}

json::object ledger_json(const Refund& r) {
  json::object o = refund_json(r);
  o["created_at"] = r.created_at;
  o["updated_at"] = r.updated_at;
  o["key_expires_at"] = r.key_expires_at;
  return o;
}

std::string refund_event_type(ChargeStatus s) { return "refund." + std::string(to_string(s)); }

}  // namespace payorch::vendor_sim
