#include "providers/stripe/classify.h"

#include <string>

#include "providers/vendor_call.h"

namespace payorch::providers::stripe {
namespace {

namespace json = boost::json;

std::string status_text(int status) { return "HTTP " + std::to_string(status); }

// A PaymentIntent or Refund as a result: payorch's upper-case currency, the status mapped.
VendorResult to_result(const StripeObject& object, VendorOutcome outcome, int http_status) {
  VendorResult r;
  r.outcome = outcome;
  r.vendor_reference = object.id;
  r.amount_minor = object.amount;
  r.currency = upper(object.currency);
  r.http_status = http_status;
  if (outcome == VendorOutcome::declined)
    r.decline_code = object.decline_code.value_or(object.status);
  r.detail = "status " + object.status;
  return r;
}

// What was sent, and how its answer object is read and checked.
struct Sent {
  std::string_view noun;  // "payment_intent" | "refund"
  std::optional<StripeObject> (*parse)(const json::value&, std::string&);
  VendorOutcome (*outcome)(const StripeObject&);
  std::string client_key;
  std::int64_t amount_minor;
  std::string currency;
  std::optional<std::string> payment_intent;  // a refund's charge_reference
};

// An object trusted only when it is the one we asked for: a success for another key or amount
// proves nothing about ours (and may hide a double charge or refund).
VendorResult from_object(const json::value& v, const Sent& sent, int http_status,
                         std::string_view what) {
  std::string error;
  const auto object = sent.parse(v, error);
  if (!object)
    return outcome_only(VendorOutcome::ambiguous, http_status,
                        std::string(what) + ": unparseable " + std::string(sent.noun) + ": " + error);
  const VendorOutcome outcome = sent.outcome(*object);
  VendorResult r = to_result(*object, outcome, http_status);
  std::string diff = mismatch(*object, sent.client_key, sent.amount_minor, sent.currency);
  // A refund of another PaymentIntent under our key moves someone else's money.
  if (sent.payment_intent && object->payment_intent && *object->payment_intent != *sent.payment_intent)
    diff += (diff.empty() ? "" : "; ") + ("payment_intent " + *object->payment_intent +
                                          " != " + *sent.payment_intent);
  if (!diff.empty()) {
    r.outcome = VendorOutcome::ambiguous;
    r.decline_code.reset();
    r.detail = std::string(what) + ": " + std::string(sent.noun) + " " + object->id +
               " does not match the request (" + diff + "); status " + object->status;
  } else if (outcome == VendorOutcome::ambiguous) {
    r.detail = std::string(what) + ": " + std::string(sent.noun) + " " + object->id +
               " in status " + object->status + ", which is no decision";
  }
  return r;
}

VendorResult classify_write(const net::HttpResult& res, const Sent& sent) {
  if (auto r = without_answer(res)) return *r;
  const int status = res.status;
  if (status == 200) {
    const auto body = parse_json(res.body);
    if (!body) return outcome_only(VendorOutcome::ambiguous, status, "200 with a body that is not JSON");
    return from_object(*body, sent, status, "200");
  }
  const auto error = parse_error(res.body);
  const std::string type = error ? error->type : "";
  const std::string code = error ? error->code : "";
  const std::string said = status_text(status) + (type.empty() ? "" : " " + type) +
                           (code.empty() ? "" : "/" + code) +
                           (error && !error->message.empty() ? ": " + error->message : "");
  if (status == 401 || status == 403)
    return outcome_only(VendorOutcome::auth_refused, status, said);
  if (status == 402 && type == "card_error") {
    // The intent a failed confirmation left behind, when Stripe includes it, must be ours and
    // must say declined too; anything else contradicts the error.
    if (error->payment_intent) {
      VendorResult r = from_object(*error->payment_intent, sent, status, "402");
      if (r.outcome != VendorOutcome::declined) {
        r.outcome = VendorOutcome::ambiguous;
        r.decline_code.reset();
        r.detail = said + "; " + r.detail;
        return r;
      }
    }
    VendorResult r = outcome_only(VendorOutcome::declined, status, said);
    r.decline_code = !error->decline_code.empty() ? error->decline_code
                     : !code.empty()              ? code
                                                  : type;
    if (error->payment_intent)
      if (const auto* id = error->payment_intent->get_object().if_contains("id"); id && id->is_string())
        r.vendor_reference = std::string(id->get_string());
    return r;
  }
  if (status == 400 && code == "rate_limit")
    return outcome_only(VendorOutcome::ambiguous, status, said);
  if (status == 400 && type == "idempotency_error")
    return outcome_only(code == "idempotency_key_in_use" ? VendorOutcome::ambiguous
                                                         : VendorOutcome::key_mismatch,
                        status, said);
  // Validation failed before the endpoint executed: nothing was done, and the same request
  // will be refused again (https://docs.stripe.com/idempotency: "If incoming parameters fail
  // validation … no idempotent result is saved").
  if (status == 400 && type == "invalid_request_error") {
    VendorResult r = outcome_only(VendorOutcome::declined, status, said);
    r.decline_code = code.empty() ? type : code;
    return r;
  }
  // 409 (the key is in use by a request still executing), 429 (lock_timeout, rate_limit),
  // 404, 5xx and anything unexpected: Stripe may have acted, or may still act.
  return outcome_only(VendorOutcome::ambiguous, status, said);
}

}  // namespace

VendorOutcome payment_intent_outcome(const StripeObject& pi) {
  const std::string_view s = pi.status;
  if (s == "succeeded") return VendorOutcome::succeeded;
  if (s == "processing" || s == "requires_action" || s == "requires_confirmation")
    return VendorOutcome::pending;
  if (s == "requires_payment_method")
    return pi.decline_code ? VendorOutcome::declined : VendorOutcome::ambiguous;
  if (s == "canceled") return VendorOutcome::declined;
  return VendorOutcome::ambiguous;  // requires_capture and any status payorch does not know
}

VendorOutcome refund_outcome(const StripeObject& refund) {
  const std::string_view s = refund.status;
  if (s == "succeeded") return VendorOutcome::succeeded;
  if (s == "pending" || s == "requires_action") return VendorOutcome::pending;
  if (s == "failed" || s == "canceled") return VendorOutcome::declined;
  return VendorOutcome::ambiguous;
}

VendorResult classify_submit(const net::HttpResult& res, const ChargeRequest& sent) {
  return classify_write(res, Sent{"payment_intent", parse_payment_intent, payment_intent_outcome,
                                  sent.client_key, sent.amount_minor, sent.currency, std::nullopt});
}

VendorResult classify_refund(const net::HttpResult& res, const RefundRequest& sent) {
  return classify_write(res, Sent{"refund", parse_refund, refund_outcome, sent.client_key,
                                  sent.amount_minor, sent.currency, sent.charge_reference});
}

}  // namespace payorch::providers::stripe
