#include "providers/stripe/callback.h"

#include <array>
#include <string_view>

#include "providers/stripe/classify.h"
#include "providers/stripe/object.h"
#include "providers/timestamped_signature.h"

namespace payorch::providers::stripe {
namespace {

namespace json = boost::json;

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

CallbackCheck acknowledged_only(std::string detail) {
  CallbackCheck check;
  check.verified = true;
  check.detail = std::move(detail);
  return check;
}

CallbackCheck parse_event(const std::string& body) {
  const auto v = parse_json(body);
  if (!v) return refuse(CallbackError::malformed, "body is not JSON (or names a key twice)");
  const json::object* o = v->if_object();
  const json::value* id = o ? o->if_contains("id") : nullptr;
  const json::value* type = o ? o->if_contains("type") : nullptr;
  const json::value* data = o ? o->if_contains("data") : nullptr;
  const json::value* object = data && data->is_object() ? data->get_object().if_contains("object") : nullptr;
  if (!id || !id->is_string() || id->get_string().empty() || !type || !type->is_string() || !object)
    return refuse(CallbackError::malformed, "event lacks id, type or data.object");
  const std::string event_type(type->get_string());
  OperationKind kind = OperationKind::charge;
  if (one_of(refund_events, event_type))
    kind = OperationKind::refund;
  else if (!one_of(payment_intent_events, event_type))
    return acknowledged_only("event type " + event_type + " is not tracked");
  std::string error;
  const auto parsed = kind == OperationKind::refund ? parse_refund(*object, error)
                                                    : parse_payment_intent(*object, error);
  if (!parsed) return refuse(CallbackError::malformed, event_type + ": " + error);
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
  if (auto refused = refuse_unless_signed(headers, "stripe-signature", "Stripe-Signature", body,
                                          now_unix_s, key.secret, key.tolerance))
    return *refused;
  return parse_event(body);
}

}  // namespace payorch::providers::stripe
