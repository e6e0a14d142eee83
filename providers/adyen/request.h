#pragma once
// The Checkout API v71 request bodies payorch sends to Adyen (docs/contract.md §9), built from
// Adyen's OpenAPI description, github.com/Adyen/adyen-openapi json/CheckoutService-v71.json
// (PaymentRequest, PaymentRefundRequest, StandalonePaymentCancelRequest).
#include <string>

#include "providers/adapter.h"

namespace payorch::providers::adyen {

// The stored payment method an intent's `source` names. Adyen binds a token to the shopper it
// was stored for, and a payment with a token must name that shopper
// (https://docs.adyen.com/online-payments/tokenization/create-and-use-tokens): a source
// "<shopperReference>:<storedPaymentMethodId>" carries both; a source without ':' is the token
// alone and is sent without shopperReference (Adyen then refuses it with a validation error
// unless the account needs none).
struct StoredMethod {
  std::string shopper_reference;  // "" when the source names none
  std::string stored_payment_method_id;
};
StoredMethod parse_source(const std::string& source);

// POST /payments: a merchant-initiated payment with a stored card
// (https://docs.adyen.com/online-payments/tokenization/create-and-use-tokens: later payments
// with a token are shopperInteraction ContAuth; UnscheduledCardOnFile is the model for
// payments on a non-fixed schedule that the shopper does not start, which is what an
// orchestrator's server-side charge is). `reference` is the client_key; the payee travels in
// `metadata` (at most 80 characters per value). returnUrl is required by the schema but only
// used for redirects, which a ContAuth payment with a stored card does not do: payorch sends a
// fixed placeholder.
std::string payment_body(const ChargeRequest& req, const std::string& merchant_account);

// POST /payments/{pspReference}/refunds: the refund's client_key as `reference`.
std::string refund_body(const RefundRequest& req, const std::string& merchant_account);

// POST /cancels: cancel by our reference, without a PSP reference (CheckoutService-v71.json
// "/cancels"; https://docs.adyen.com/online-payments/cancel). The outcome comes later, in a
// TECHNICAL_CANCEL webhook.
std::string cancel_body(const ChargeRequest& req, const std::string& merchant_account);

// The URL-path form of a pspReference (percent-encoded unreserved characters).
std::string path_segment(const std::string& value);

}  // namespace payorch::providers::adyen
