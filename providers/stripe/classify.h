#pragma once
// What a Stripe answer means (docs/contract.md §3, §5, §9), as pure functions of the HTTP result
// and what was sent. Every answer that does not prove Stripe's decision is `ambiguous`; only a
// request that certainly never left is `not_sent`. Recovery is `replay`: the engine re-sends
// the same create+confirm with the same Idempotency-Key and Stripe answers with the saved
// result of the first request (https://docs.stripe.com/api/idempotent_requests).
//
// PaymentIntent status (https://docs.stripe.com/api/payment_intents/object#payment_intent_object-status,
// https://docs.stripe.com/payments/paymentintents/lifecycle):
//   succeeded                                   → succeeded
//   processing, requires_action,
//   requires_confirmation                       → pending (a webhook or reconciliation finishes it)
//   requires_payment_method with a
//     last_payment_error                        → declined, decline_code = its decline_code or code
//   requires_payment_method without one         → ambiguous (a confirm=true create never stops
//                                                 there without an error: not an answer we understand)
//   requires_capture                            → ambiguous: payorch never asks for manual capture,
//                                                 so an authorized, uncaptured intent is neither
//                                                 a charge nor a decline; reconciliation decides
//   canceled                                    → declined, decline_code = cancellation_reason
//   anything else                               → ambiguous
// Refund status (https://docs.stripe.com/api/refunds/object#refund_object-status):
//   succeeded → succeeded; pending, requires_action → pending;
//   failed, canceled → declined (decline_code = failure_reason, else the status); else ambiguous.
//
// POST /v1/payment_intents and POST /v1/refunds (errors: https://docs.stripe.com/api/errors,
// https://docs.stripe.com/error-low-level, https://docs.stripe.com/error-codes):
//   transport not_sent                          → not_sent
//   transport sent_no_answer                    → ambiguous
//   200 object with the status above            → that row, if metadata.client_key, amount and
//                                                 currency (and a refund's payment_intent) are
//                                                 what was sent; otherwise ambiguous
//   200 unparseable / not the object            → ambiguous
//   402 card_error                              → declined, decline_code = decline_code or code
//                                                 (ambiguous if its payment_intent is not ours
//                                                 or not in a declined status)
//   400 idempotency_error                       → key_mismatch (the key was used with other
//                                                 parameters), unless code idempotency_key_in_use
//                                                 → ambiguous
//   400 invalid_request_error                   → declined, decline_code = code or the type:
//                                                 parameters failed validation before execution,
//                                                 and the same request will be refused again
//   400 with code rate_limit                    → ambiguous
//   401 (authentication), 403 (permission_error)→ auth_refused
//   409 (another request with this key is
//        executing)                             → ambiguous: its outcome is not known yet
//   429 lock_timeout or rate_limit              → ambiguous: lock_timeout may come after the
//                                                 endpoint began; for a rate limit the docs do not
//                                                 promise that nothing was executed, and replay
//                                                 under the same key is safe either way
//   404, 5xx (api_error), anything else         → ambiguous
#include "net/http_types.h"
#include "providers/adapter.h"
#include "providers/stripe/object.h"

namespace payorch::providers::stripe {

// The PaymentIntent and Refund status rows above.
VendorOutcome payment_intent_outcome(const StripeObject& payment_intent);
VendorOutcome refund_outcome(const StripeObject& refund);

VendorResult classify_submit(const net::HttpResult& res, const ChargeRequest& sent);
VendorResult classify_refund(const net::HttpResult& res, const RefundRequest& sent);

}  // namespace payorch::providers::stripe
