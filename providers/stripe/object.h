#pragma once
// The members of Stripe's PaymentIntent, Refund and error objects that payorch reads. Field
// names from the API reference:
//   PaymentIntent https://docs.stripe.com/api/payment_intents/object
//     {"id":"pi_…","object":"payment_intent","status","amount","currency","metadata":{…},
//      "last_payment_error":null|{"code","decline_code",…},"cancellation_reason":null|"…",…}
//   Refund https://docs.stripe.com/api/refunds/object
//     {"id":"re_…","object":"refund","status","amount","currency","metadata":{…},
//      "payment_intent":null|"pi_…","failure_reason":null|"…",…}
//   Error https://docs.stripe.com/api/errors
//     {"error":{"type","code","decline_code","message","payment_intent"?:{…},…}}
// Everything else the vendor sends is ignored, so new fields never break parsing.
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace payorch::providers::stripe {

// What a PaymentIntent and a Refund share, as far as payorch reads them.
struct StripeObject {
  std::string id;
  std::string status;                          // the vendor's word; classify.h maps it
  std::int64_t amount = 0;                     // minor units
  std::string currency;                        // as Stripe writes it: lower-case ISO code
  std::optional<std::string> client_key;       // metadata.client_key
  // PaymentIntent: last_payment_error.decline_code, else its code, else cancellation_reason.
  // Refund: failure_reason.
  std::optional<std::string> decline_code;
  std::optional<std::string> payment_intent;   // Refund only: the refunded PaymentIntent
};

// Parses a PaymentIntent ("object":"payment_intent") or a Refund ("object":"refund");
// nullopt (with `error` set) when v is not such an object or a member payorch reads is
// missing or of the wrong type. Never guesses a missing member.
std::optional<StripeObject> parse_payment_intent(const boost::json::value& v, std::string& error);
std::optional<StripeObject> parse_refund(const boost::json::value& v, std::string& error);

struct StripeError {
  std::string type;          // card_error, idempotency_error, invalid_request_error, api_error, …
  std::string code;          // "" when absent
  std::string decline_code;  // "" when absent
  std::string message;
  // The PaymentIntent a failed confirmation left behind (card_error on create+confirm).
  std::optional<boost::json::value> payment_intent;
};

// The error of an error body; nullopt when the body is not {"error":{"type":…}}.
std::optional<StripeError> parse_error(const std::string& body);

// The body as JSON, read with the one JSON reading policy (core/strict_json.h).
std::optional<boost::json::value> parse_json(std::string_view body);

// What differs between the object and what was sent (metadata.client_key, amount, currency
// compared case-insensitively); empty when they agree.
std::string mismatch(const StripeObject& object, const std::string& client_key,
                     std::int64_t amount_minor, const std::string& currency);

// ISO currency codes: Stripe writes them lower-case, payorch upper-case.
std::string upper(std::string_view s);
std::string lower(std::string_view s);

}  // namespace payorch::providers::stripe
