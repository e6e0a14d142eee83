#include "providers/wechatpay/notification.h"

#include <boost/json/object.hpp>

#include <cstdlib>

#include "providers/json_fields.h"
#include "providers/timestamped_signature.h"
#include "providers/wechatpay/classify.h"
#include "providers/wechatpay/signing.h"

namespace payorch::providers::wechatpay {
namespace {

namespace json = boost::json;

std::optional<std::int64_t> parse_seconds(const std::string& text) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  for (const char c : text)
    if (c < '0' || c > '9') return std::nullopt;
  return std::strtoll(text.c_str(), nullptr, 10);
}

CallbackCheck verified(std::optional<CallbackEvent> event, std::string detail) {
  CallbackCheck c;
  c.verified = true;
  if (event) c.events.push_back(std::move(*event));
  c.detail = std::move(detail);
  return c;
}

// The event a resource read as `r` carries, about `key` (its out_trade_no / out_refund_no):
// none when the outcome is not one an event can carry (`carried`).
CallbackCheck event_of(const std::string& id, OperationKind kind, std::string_view key_name,
                       const std::optional<std::string>& key, VendorResult r, bool (*carried)(VendorOutcome)) {
  if (!key) return refuse(CallbackError::malformed, "resource without " + std::string(key_name));
  if (!carried(r.outcome)) return verified(std::nullopt, *key + ": " + r.detail + " (no event)");
  CallbackEvent e;
  e.event_id = id;
  e.kind = kind;
  e.client_key = *key;
  e.outcome = r.outcome;
  e.vendor_reference = r.vendor_reference;
  e.decline_code = r.decline_code;
  e.amount_minor = r.amount_minor;
  e.currency = r.currency;
  return verified(std::move(e), r.detail);
}

bool charge_event(VendorOutcome o) {
  return o == VendorOutcome::succeeded || o == VendorOutcome::declined || o == VendorOutcome::pending;
}
bool refund_event(VendorOutcome o) { return o == VendorOutcome::succeeded || o == VendorOutcome::declined; }

CallbackCheck transaction_event(const std::string& id, const json::object& t) {
  VendorResult r = read_transaction(t, nullptr, 0);
  if (!r.currency) r.currency = "CNY";  // amount.currency is optional: CNY when absent
  return event_of(id, OperationKind::charge, "out_trade_no", string_member(t, "out_trade_no"), std::move(r),
                  charge_event);
}

}  // namespace

CallbackCheck verify_notification(const std::map<std::string, std::string>& headers, const std::string& body,
                                  std::int64_t now_unix_s, const CallbackKeys& keys) {
  const SignatureCheck signature = verify_signature(headers, body, keys.platform_serial, keys.platform_public_key);
  if (signature != SignatureCheck::ok) return refuse(CallbackError::bad_signature, std::string(to_string(signature)));
  const auto timestamp = parse_seconds(signed_headers(headers)->timestamp);
  const std::int64_t tolerance_s = keys.tolerance.count() / 1000;
  if (!timestamp || std::llabs(now_unix_s - *timestamp) > tolerance_s)
    return refuse(CallbackError::stale_timestamp, "Wechatpay-Timestamp outside the tolerance");
  const auto root = json_object(body);
  if (!root) return refuse(CallbackError::malformed, "body is not a JSON object");
  const auto id = string_member(*root, "id");
  const auto event_type = string_member(*root, "event_type");
  const json::value* resource_value = root->if_contains("resource");
  const json::object* resource = resource_value ? resource_value->if_object() : nullptr;
  if (!id || id->empty() || !event_type || !resource)
    return refuse(CallbackError::malformed, "notification without id, event_type or resource");
  const auto algorithm = string_member(*resource, "algorithm");
  const auto ciphertext = string_member(*resource, "ciphertext");
  const auto nonce = string_member(*resource, "nonce");
  const auto associated_data = string_member(*resource, "associated_data");
  if (!algorithm || *algorithm != "AEAD_AES_256_GCM" || !ciphertext || !nonce)
    return refuse(CallbackError::malformed, "resource is not AEAD_AES_256_GCM with ciphertext and nonce");
  const auto plain = decrypt_aes_256_gcm(keys.api_v3_key, *nonce, associated_data.value_or(""), *ciphertext);
  if (!plain) return refuse(CallbackError::bad_signature, "resource does not decrypt under the APIv3 key");
  const auto decrypted = json_object(*plain);
  if (!decrypted) return refuse(CallbackError::malformed, "decrypted resource is not a JSON object");
  if (*event_type == "TRANSACTION.SUCCESS") return transaction_event(*id, *decrypted);
  if (*event_type == "REFUND.SUCCESS" || *event_type == "REFUND.CLOSED" || *event_type == "REFUND.ABNORMAL")
    return event_of(*id, OperationKind::refund, "out_refund_no", string_member(*decrypted, "out_refund_no"),
                    read_refund(*decrypted, nullptr, 0), refund_event);
  return verified(std::nullopt, "event_type " + *event_type + " (not tracked)");
}

}  // namespace payorch::providers::wechatpay
