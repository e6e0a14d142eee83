#pragma once
// Adyen standard webhooks (docs/contract.md §6, §9), as described by Adyen's OpenAPI
// description, github.com/Adyen/adyen-openapi json/Webhooks-v1.json:
//   body {"live":"true"|"false","notificationItems":[{"NotificationRequestItem":{
//          "eventCode","success":"true"|"false","pspReference","originalReference"?,
//          "merchantAccountCode","merchantReference","amount":{"value","currency"},
//          "reason"?,"additionalData":{"hmacSignature", …}, …}}, …]}
// Each item carries its own HMAC signature
// (https://docs.adyen.com/development-resources/webhooks/secure-webhooks/verify-hmac-signatures):
// base64 of HMAC-SHA256, keyed with the hex-decoded HMAC key, over
//   pspReference:originalReference:merchantAccountCode:merchantReference:value:currency:eventCode:success
// (absent fields as ""). Adyen expects the body "[accepted]" as acknowledgement
// (https://docs.adyen.com/development-resources/webhooks), else it retries the whole batch.
//
// What payorch reads (one CallbackEvent per item it tracks):
//   AUTHORISATION success "true"/"false"  → the charge succeeded / was declined (decline_code =
//                                           reason); client_key = merchantReference,
//                                           vendor_reference = pspReference
//   REFUND success "true"/"false"         → the refund succeeded / was declined; client_key =
//                                           merchantReference (the refund's own reference),
//                                           vendor_reference = the refund's pspReference
//   REFUND_FAILED                         → the refund was declined after all (the money did not
//                                           go back: a late contradiction if it had succeeded)
//   TECHNICAL_CANCEL, CANCELLATION success "true"
//                                         → the charge was declined: its authorisation is
//                                           cancelled, it will not succeed (decline_code =
//                                           reason, or "technical_cancel" / "cancellation");
//                                           client_key = merchantReference (the payment's),
//                                           vendor_reference = originalReference (the
//                                           payment's pspReference) when given. On a payment
//                                           already SUCCEEDED this is a late contradiction.
//   TECHNICAL_CANCEL, CANCELLATION success "false"
//                                         → the cancel failed; the charge may stand: no event
//   any other eventCode (CAPTURE, REPORT_AVAILABLE, …)
//                                         → verified, acknowledged, no event
// event_id = "<pspReference>:<eventCode>:<success>": Adyen may send the same notification more
// than once and identifies a duplicate by its pspReference and eventCode; a later delivery with
// another `success` for the same pair is a new fact about the payment, kept apart by `success`
// (https://docs.adyen.com/development-resources/webhooks/handle-webhook-events).
#include <map>
#include <string>

#include "providers/adapter.h"

namespace payorch::providers::adyen {

// The string an item's HMAC is computed over, from the item's fields.
struct SignedFields {
  std::string psp_reference;
  std::string original_reference;
  std::string merchant_account_code;
  std::string merchant_reference;
  std::string value;  // the amount's value in decimal
  std::string currency;
  std::string event_code;
  std::string success;
};
std::string signing_string(const SignedFields& f);

// base64(HMAC-SHA256(hex_decode(hex_key), data)); "" when hex_key is not hex of even length.
std::string hmac_signature(const std::string& hex_key, const std::string& data);

// Checks every item's signature (constant time) before reading any of them: one bad or missing
// signature refuses the whole notification (bad_signature, nothing recorded; Adyen retries).
// A body that is not a notification, or an item without the fields above → malformed.
// Adyen signs no timestamp, so there is no tolerance to check.
CallbackCheck verify_notification(const std::string& body, const std::string& hex_key);

}  // namespace payorch::providers::adyen
