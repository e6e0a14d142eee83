#pragma once
// Verification and parsing of Stripe webhook events (https://docs.stripe.com/webhooks#verify-manually,
// https://docs.stripe.com/api/events/object):
//   header  Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>[,v1=…][,v0=…]
//           Several v1= values appear while a signing secret is rolled; any one may match.
//           v0= (a scheme Stripe uses only for test-mode events) and other schemes are ignored:
//           core/signature.h verify_timestamped reads exactly that way.
//   body    {"id":"evt_…","object":"event","type","created","data":{"object":<object>},…}
// Event types read (https://docs.stripe.com/api/events/types), the outcome taken from the
// object's status by classify.h's tables:
//   payment_intent.succeeded | .payment_failed | .processing | .requires_action | .canceled
//     data.object = PaymentIntent
//   refund.created | refund.updated | refund.failed | charge.refund.updated
//     data.object = Refund
// The event's client_key is the object's metadata.client_key. A verified event of another type,
// about an object payorch did not create (no metadata.client_key), or whose object status is
// no decision (requires_capture, unknown) carries no events: payorch acknowledges it and
// records nothing. The event id is the inbox dedup key.
#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "providers/adapter.h"

namespace payorch::providers::stripe {

struct CallbackKey {
  std::string secret;                            // the endpoint's signing secret, whsec_…
  std::chrono::milliseconds tolerance{300'000};  // Stripe's libraries default to 300 s
};

// Checks the signature (constant time) → bad_signature; the timestamp within tolerance →
// stale_timestamp; then the body → malformed. `headers` keys are lower-case.
CallbackCheck verify_callback(const std::map<std::string, std::string>& headers,
                              const std::string& body, std::int64_t now_unix_s,
                              const CallbackKey& key);

}  // namespace payorch::providers::stripe
