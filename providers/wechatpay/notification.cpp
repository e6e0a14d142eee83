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

std::optional<std::string> string_field(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (!v || !v->is_string()) return std::nullopt;
  return std::string(v->get_string());
}

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

CallbackCheck transaction_event(const std::string& id, const json::object& t) {
  const VendorResult r = read_transaction(t, nullptr, 0);
  const auto out_trade_no = string_field(t, "out_trade_no");
  if (!out_trade_no) return refuse(CallbackError::malformed, "transaction without out_trade_no");
  if (r.outcome != VendorOutcome::succeeded && r.outcome != VendorOutcome::declined &&
      r.outcome != VendorOutcome::pending)
    return verified(std::nullopt, "transaction " + *out_trade_no + ": " + r.detail + " (no event)");
  CallbackEvent e;
  e.event_id = id;
  e.kind = OperationKind::charge;
  e.client_key = *out_trade_no;
  e.outcome = r.outcome;
  e.vendor_reference = r.vendor_reference;
  e.decline_code = r.decline_code;
  e.amount_minor = r.amount_minor;
  e.currency = r.currency ? r.currency : std::optional<std::string>("CNY");
  return verified(std::move(e), r.detail);
}

CallbackCheck refund_event(const std::string& id, const json::object& resource) {
  const VendorResult r = read_refund(resource, nullptr, 0);
  const auto out_refund_no = string_field(resource, "out_refund_no");
  if (!out_refund_no) return refuse(CallbackError::malformed, "refund without out_refund_no");
  if (r.outcome != VendorOutcome::succeeded && r.outcome != VendorOutcome::declined)
    return verified(std::nullopt, "refund " + *out_refund_no + ": " + r.detail + " (no event)");
  CallbackEvent e;
  e.event_id = id;
  e.kind = OperationKind::refund;
  e.client_key = *out_refund_no;
  e.outcome = r.outcome;
  e.vendor_reference = r.vendor_reference;
  e.decline_code = r.decline_code;
  e.amount_minor = r.amount_minor;
  e.currency = r.currency;
  return verified(std::move(e), r.detail);
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
  const auto root = parse_object(body);
  if (!root) return refuse(CallbackError::malformed, "body is not a JSON object");
  const auto id = string_field(*root, "id");
  const auto event_type = string_field(*root, "event_type");
  const json::value* resource_value = root->if_contains("resource");
  const json::object* resource = resource_value ? resource_value->if_object() : nullptr;
  if (!id || id->empty() || !event_type || !resource)
    return refuse(CallbackError::malformed, "notification without id, event_type or resource");
  const auto algorithm = string_field(*resource, "algorithm");
  const auto ciphertext = string_field(*resource, "ciphertext");
  const auto nonce = string_field(*resource, "nonce");
  const auto associated_data = string_field(*resource, "associated_data");
  if (!algorithm || *algorithm != "AEAD_AES_256_GCM" || !ciphertext || !nonce)
    return refuse(CallbackError::malformed, "resource is not AEAD_AES_256_GCM with ciphertext and nonce");
  const auto plain = decrypt_aes_256_gcm(keys.api_v3_key, *nonce, associated_data.value_or(""), *ciphertext);
  if (!plain) return refuse(CallbackError::bad_signature, "resource does not decrypt under the APIv3 key");
  const auto decrypted = parse_object(*plain);
  if (!decrypted) return refuse(CallbackError::malformed, "decrypted resource is not a JSON object");
  if (*event_type == "TRANSACTION.SUCCESS") return transaction_event(*id, *decrypted);
  if (*event_type == "REFUND.SUCCESS" || *event_type == "REFUND.CLOSED" || *event_type == "REFUND.ABNORMAL")
    return refund_event(*id, *decrypted);
  return verified(std::nullopt, "event_type " + *event_type + " (not tracked)");
}

}  // namespace payorch::providers::wechatpay
