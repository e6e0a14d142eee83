#pragma once
// What an Adyen Checkout API v71 answer means (docs/contract.md §3, §5, §9), as pure functions
// of the HTTP result and what was sent. Fields, result codes and error bodies come from Adyen's
// OpenAPI description, github.com/Adyen/adyen-openapi json/CheckoutService-v71.json
// (PaymentResponse, PaymentRefundResponse, StandalonePaymentCancelResponse, ServiceError). Every answer that does
// not prove Adyen's decision is `ambiguous`; only a request that certainly never left is
// `not_sent`.
//
// POST /payments → PaymentResponse.resultCode
// (https://docs.adyen.com/online-payments/payment-result-codes):
//   Authorised                                  → succeeded
//   Refused, Cancelled                          → declined, decline_code = refusalReason
//                                                 (else refusalReasonCode, else the resultCode)
//   Received, Pending, PresentToShopper,
//   RedirectShopper, IdentifyShopper,
//   ChallengeShopper, AuthenticationFinished,
//   AuthenticationNotRequired                   → pending (the final result comes by webhook)
//   PartiallyAuthorised                         → ambiguous (authorised for another amount)
//   Error                                       → ambiguous (the docs give no proof that no
//                                                 money moved; the webhook or an operator decides)
//   Success (in the enum, undocumented), any
//   other or missing resultCode                 → ambiguous
//   merchantReference or amount (when present)
//   not what was sent                           → ambiguous
// Errors (ServiceError {status, errorCode, message, errorType, pspReference}; see
// https://docs.adyen.com/development-resources/response-handling and
// https://docs.adyen.com/development-resources/api-idempotency#transient-errors, and Adyen's
// account of the 704 answer in https://github.com/Adyen/adyen-java-api-library/pull/288):
//   transport not_sent                          → not_sent
//   transport sent_no_answer                    → ambiguous
//   401 / 403                                   → auth_refused
//   any status with errorCode "704" (request
//   already processed or in progress: another
//   request with this idempotency key is still
//   being processed; Adyen answers it 409 with
//   Transient-Error: true, "retry later with
//   the same key")                              → ambiguous (recovery asks again)
//   400 / 422 with a ServiceError errorCode     → declined, decline_code = errorType_errorCode
//                                                 (a validation error: nothing was done)
//   5xx, other status, or an unreadable body    → ambiguous
// The docs describe no distinct error for an idempotency key reused with another body: a
// replayed answer for another payment is caught by the merchantReference/amount check above
// (ambiguous), never read as ours.
#include "net/http_types.h"
#include "providers/adapter.h"

namespace payorch::providers::adyen {

VendorResult classify_payment(const net::HttpResult& res, const ChargeRequest& sent);

// POST /payments/{pspReference}/refunds → 201 PaymentRefundResponse {status: "received"}:
// pending (the outcome comes in a REFUND webhook), vendor_reference = the refund's
// pspReference, if paymentPspReference, reference, amount and merchantAccount are what was
// sent; otherwise ambiguous. Errors as for /payments.
VendorResult classify_refund(const net::HttpResult& res, const RefundRequest& sent,
                             const std::string& merchant_account);

// POST /cancels → 201 StandalonePaymentCancelResponse {status: "received"}: pending (the cancel
// was accepted; its outcome comes in a TECHNICAL_CANCEL webhook), if paymentReference and
// merchantAccount are what was sent. Errors as for /payments.
VendorResult classify_cancel(const net::HttpResult& res, const ChargeRequest& sent,
                             const std::string& merchant_account);

}  // namespace payorch::providers::adyen
