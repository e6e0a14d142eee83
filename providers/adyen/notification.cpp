#include "providers/adyen/notification.h"

#include <boost/json/object.hpp>

#include <limits>
#include <optional>
#include <variant>
#include <vector>

#include "core/hex.h"
#include "core/signature.h"
#include "core/strict_json.h"
#include "providers/base64.h"

namespace payorch::providers::adyen {
namespace {

namespace json = boost::json;

CallbackCheck reject(CallbackError error, std::string detail) {
  CallbackCheck check;
  check.error = error;
  check.detail = std::move(detail);
  return check;
}

const json::string* string_member(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v ? v->if_string() : nullptr;
}

// One NotificationRequestItem, read far enough to check its signature and make its event.
struct Item {
  SignedFields fields;
  std::int64_t amount_value = 0;
  std::string signature;
  std::optional<std::string> reason;
};

std::optional<Item> read_item(const json::value& entry, std::string& error) {
  const json::object* wrapper = entry.if_object();
  const json::value* inner = wrapper ? wrapper->if_contains("NotificationRequestItem") : nullptr;
  const json::object* o = inner ? inner->if_object() : nullptr;
  if (!o) {
    error = "an item is not {\"NotificationRequestItem\":{…}}";
    return std::nullopt;
  }
  const json::string* psp = string_member(*o, "pspReference");
  const json::string* account = string_member(*o, "merchantAccountCode");
  const json::string* reference = string_member(*o, "merchantReference");
  const json::string* event_code = string_member(*o, "eventCode");
  const json::string* success = string_member(*o, "success");
  const json::value* amount_v = o->if_contains("amount");
  const json::object* amount = amount_v ? amount_v->if_object() : nullptr;
  const json::value* value = amount ? amount->if_contains("value") : nullptr;
  const json::string* currency = amount ? string_member(*amount, "currency") : nullptr;
  if (!psp || !account || !reference || !event_code || !success || !value || !currency) {
    error = "an item lacks pspReference, merchantAccountCode, merchantReference, eventCode, "
            "success or amount";
    return std::nullopt;
  }
  Item item;
  if (const auto* i = value->if_int64()) {
    item.amount_value = *i;
  } else if (const auto* u = value->if_uint64();
             u && *u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    item.amount_value = static_cast<std::int64_t>(*u);
  } else {
    error = "an item's amount.value is not an integer";
    return std::nullopt;
  }
  const json::value* original_v = o->if_contains("originalReference");
  if (original_v && !original_v->is_string() && !original_v->is_null()) {
    error = "an item's originalReference is not a string";
    return std::nullopt;
  }
  item.fields = SignedFields{std::string(*psp),
                             original_v && original_v->is_string()
                                 ? std::string(original_v->get_string())
                                 : std::string(),
                             std::string(*account),
                             std::string(*reference),
                             std::to_string(item.amount_value),
                             std::string(*currency),
                             std::string(*event_code),
                             std::string(*success)};
  const json::value* additional_v = o->if_contains("additionalData");
  const json::object* additional = additional_v ? additional_v->if_object() : nullptr;
  if (const json::string* signature = additional ? string_member(*additional, "hmacSignature") : nullptr)
    item.signature = *signature;
  if (const json::string* reason = string_member(*o, "reason"); reason && !reason->empty())
    item.reason = std::string(*reason);
  return item;
}

bool is_cancel_event(const std::string& event_code) {
  return event_code == "TECHNICAL_CANCEL" || event_code == "CANCELLATION";
}

// The event an item makes, nullopt for an eventCode payorch does not track.
std::optional<CallbackEvent> event_of(const Item& item, bool success) {
  const SignedFields& f = item.fields;
  CallbackEvent event;
  if (f.event_code == "AUTHORISATION") {
    event.kind = OperationKind::charge;
    event.outcome = success ? VendorOutcome::succeeded : VendorOutcome::declined;
  } else if (f.event_code == "REFUND") {
    event.kind = OperationKind::refund;
    event.outcome = success ? VendorOutcome::succeeded : VendorOutcome::declined;
  } else if (f.event_code == "REFUND_FAILED") {
    event.kind = OperationKind::refund;
    event.outcome = VendorOutcome::declined;
  } else if (is_cancel_event(f.event_code)) {
    // A cancelled authorisation: the charge will not succeed
    // (https://docs.adyen.com/online-payments/cancel: the financial institution releases the
    // funds; the outcome of /cancels by paymentReference comes as TECHNICAL_CANCEL, of a cancel
    // by PSP reference as CANCELLATION). merchantReference is the original payment's reference
    // (https://docs.adyen.com/api-explorer/Webhooks/1/post/CANCELLATION), originalReference its
    // pspReference; pspReference names the cancel itself. A failed cancel says nothing final
    // about the charge (it may stand): no event.
    if (!success) return std::nullopt;
    event.kind = OperationKind::charge;
    event.outcome = VendorOutcome::declined;
  } else {
    return std::nullopt;
  }
  event.event_id = f.psp_reference + ":" + f.event_code + ":" + f.success;
  event.client_key = f.merchant_reference;
  if (!is_cancel_event(f.event_code)) event.vendor_reference = f.psp_reference;
  else if (!f.original_reference.empty()) event.vendor_reference = f.original_reference;
  if (event.outcome == VendorOutcome::declined)
    event.decline_code = item.reason                        ? *item.reason
                         : f.event_code == "REFUND_FAILED"  ? std::string("refund_failed")
                         : f.event_code == "TECHNICAL_CANCEL" ? std::string("technical_cancel")
                         : f.event_code == "CANCELLATION"   ? std::string("cancellation")
                                                            : std::string("refused");
  event.amount_minor = item.amount_value;
  event.currency = f.currency;
  return event;
}

}  // namespace

std::string signing_string(const SignedFields& f) {
  return f.psp_reference + ":" + f.original_reference + ":" + f.merchant_account_code + ":" +
         f.merchant_reference + ":" + f.value + ":" + f.currency + ":" + f.event_code + ":" +
         f.success;
}

std::string hmac_signature(const std::string& hex_key, const std::string& data) {
  const auto key = hex_decode(hex_key);
  if (!key || key->empty()) return {};
  const std::string mac = hmac_sha256(*key, data);
  return base64_encode(reinterpret_cast<const unsigned char*>(mac.data()), mac.size());
}

CallbackCheck verify_notification(const std::string& body, const std::string& hex_key) {
  // Without a usable key every signature would be refused anyway; say why.
  if (!hex_decode(hex_key) || hex_key.empty())
    return reject(CallbackError::bad_signature, "no usable HMAC key (hex) configured");
  auto parsed = parse_strict_json(body);
  if (auto* e = std::get_if<StrictJsonError>(&parsed))
    return reject(CallbackError::malformed, "body refused: " + e->message);
  const json::value& root = std::get<StrictJson>(parsed).root;
  const json::object* o = root.if_object();
  const json::value* items_v = o ? o->if_contains("notificationItems") : nullptr;
  const json::array* items = items_v ? items_v->if_array() : nullptr;
  if (!items || items->empty())
    return reject(CallbackError::malformed, "body has no notificationItems");
  std::vector<Item> read;
  read.reserve(items->size());
  for (const json::value& entry : *items) {
    std::string error;
    auto item = read_item(entry, error);
    if (!item) return reject(CallbackError::malformed, error);
    read.push_back(std::move(*item));
  }
  // Every signature before any item is believed: a forged item in a batch of genuine ones
  // refuses the batch.
  for (std::size_t i = 0; i < read.size(); ++i) {
    const std::string expected = hmac_signature(hex_key, signing_string(read[i].fields));
    if (read[i].signature.empty() || !constant_time_equal(expected, read[i].signature))
      return reject(CallbackError::bad_signature,
                    "item " + std::to_string(i) + " (" + read[i].fields.psp_reference + " " +
                        read[i].fields.event_code + "): HMAC signature does not match");
  }
  CallbackCheck check;
  for (const Item& item : read) {
    const std::string& success = item.fields.success;
    if (success != "true" && success != "false")
      return reject(CallbackError::malformed, "an item's success is \"" + success + "\"");
    if (auto event = event_of(item, success == "true")) check.events.push_back(std::move(*event));
  }
  check.verified = true;
  check.ack_body = "[accepted]";
  return check;
}

}  // namespace payorch::providers::adyen
