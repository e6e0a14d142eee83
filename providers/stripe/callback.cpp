#include "providers/stripe/callback.h"

#include <array>
#include <string_view>

#include "core/signature.h"
#include "providers/stripe/classify.h"
#include "providers/stripe/object.h"

namespace payorch::providers::stripe {
namespace {

namespace json = boost::json;

constexpr std::string_view signature_header = "stripe-signature";

constexpr std::array<std::string_view, 5> payment_intent_events{
    "payment_intent.succeeded", "payment_intent.payment_failed", "payment_intent.processing",
    "payment_intent.requires_action", "payment_intent.canceled"};
constexpr std::array<std::string_view, 4> refund_events{"refund.created", "refund.updated",
                                                        "refund.failed", "charge.refund.updated"};

bool one_of(auto const& names, std::string_view type) {
  for (const std::string_view name : names)
    if (name == type) return true;
  return false;
}

CallbackCheck reject(CallbackError error, std::string detail) {
  CallbackCheck check;
  check.error = error;
  check.detail = std::move(detail);
  return check;
}

CallbackCheck acknowledged_only(std::string detail) {
  CallbackCheck check;
  check.verified = true;
  check.detail = std::move(detail);
  return check;
}

CallbackCheck parse_event(const std::string& body) {
  const auto v = parse_json(body);
  if (!v) return reject(CallbackError::malformed, "body is not JSON (or names a key twice)");
  const json::object* o = v->if_object();
  const json::value* id = o ? o->if_contains("id") : nullptr;
  const json::value* type = o ? o->if_contains("type") : nullptr;
  const json::value* data = o ? o->if_contains("data") : nullptr;
  const json::value* object = data && data->is_object() ? data->get_object().if_contains("object") : nullptr;
  if (!id || !id->is_string() || id->get_string().empty() || !type || !type->is_string() || !object)
    return reject(CallbackError::malformed, "event lacks id, type or data.object");
  const std::string event_type(type->get_string());
  OperationKind kind = OperationKind::charge;
  if (one_of(refund_events, event_type))
    kind = OperationKind::refund;
  else if (!one_of(payment_intent_events, event_type))
    return acknowledged_only("event type " + event_type + " is not tracked");
  std::string error;
  const auto parsed = kind == OperationKind::refund ? parse_refund(*object, error)
                                                    : parse_payment_intent(*object, error);
  if (!parsed) return reject(CallbackError::malformed, event_type + ": " + error);
  if (!parsed->client_key)
    return acknowledged_only(event_type + " about " + parsed->id + ", which has no metadata.client_key");
  const VendorOutcome outcome =
      kind == OperationKind::refund ? refund_outcome(*parsed) : payment_intent_outcome(*parsed);
  if (outcome != VendorOutcome::succeeded && outcome != VendorOutcome::declined &&
      outcome != VendorOutcome::pending)
    return acknowledged_only(event_type + " about " + parsed->id + " in status " + parsed->status +
                             ", which is no decision");
  CallbackEvent event;
  event.event_id = id->get_string();
  event.kind = kind;
  event.client_key = *parsed->client_key;
  event.outcome = outcome;
  event.vendor_reference = parsed->id;
  if (outcome == VendorOutcome::declined) event.decline_code = parsed->decline_code.value_or(parsed->status);
  event.amount_minor = parsed->amount;
  event.currency = upper(parsed->currency);
  CallbackCheck check;
  check.verified = true;
  check.events.push_back(std::move(event));
  return check;
}

}  // namespace

CallbackCheck verify_callback(const std::map<std::string, std::string>& headers,
                              const std::string& body, std::int64_t now_unix_s,
                              const CallbackKey& key) {
  if (key.secret.empty()) return reject(CallbackError::bad_signature, "no callback secret configured");
  const auto header = headers.find(std::string(signature_header));
  if (header == headers.end()) return reject(CallbackError::bad_signature, "no Stripe-Signature header");
  const std::int64_t tolerance_s = key.tolerance.count() / 1000;
  const SignatureVerdict verdict =
      verify_timestamped(header->second, body, key.secret, now_unix_s, tolerance_s);
  switch (verdict.result) {
    case SignatureVerdict::Result::malformed:
      return reject(CallbackError::bad_signature, "malformed Stripe-Signature header");
    case SignatureVerdict::Result::mismatch:
      return reject(CallbackError::bad_signature, "no v1 signature matches");
    case SignatureVerdict::Result::stale:
      return reject(CallbackError::stale_timestamp,
                    "timestamp " + std::to_string(verdict.t) + " is " +
                        std::to_string(verdict.age_s) + " s from now (tolerance " +
                        std::to_string(tolerance_s) + " s)");
    case SignatureVerdict::Result::valid: break;
  }
  return parse_event(body);
}

}  // namespace payorch::providers::stripe
