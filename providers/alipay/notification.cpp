#include "providers/alipay/notification.h"

#include <utility>

#include "providers/alipay/gateway.h"
#include "providers/rsa_sha256.h"

namespace payorch::providers::alipay {
namespace {

CallbackCheck reject(CallbackError e, std::string detail) {
  CallbackCheck c;
  c.error = e;
  c.detail = std::move(detail);
  return c;
}

const std::string* find(const Params& p, const std::string& key) {
  const auto it = p.find(key);
  return it == p.end() || it->second.empty() ? nullptr : &it->second;
}

}  // namespace

CallbackCheck verify_notification(const std::string& body, const std::string& app_id,
                                  const std::string& alipay_public_key) {
  const auto params = form_decode(body);
  if (!params) return reject(CallbackError::malformed, "body is not a form (or names a parameter twice)");
  const std::string* sign = find(*params, "sign");
  if (!sign) return reject(CallbackError::bad_signature, "no sign");
  if (const std::string* type = find(*params, "sign_type"); type && *type != "RSA2")
    return reject(CallbackError::bad_signature, "sign_type " + *type + " is not RSA2");
  // Alipay's pages differ on whether an empty parameter is signed ("剔除空值参数", or every
  // parameter as alipay-sdk checks it): either reading is Alipay's signature.
  const std::string content = signing_content(*params, true);
  const std::string with_empty = signing_content(*params, true, true);
  if (!rsa_sha256_verify_base64(alipay_public_key, content, *sign) &&
      (with_empty == content || !rsa_sha256_verify_base64(alipay_public_key, with_empty, *sign)))
    return reject(CallbackError::bad_signature, "sign does not verify with the Alipay public key");
  const std::string* app = find(*params, "app_id");
  if (!app || *app != app_id)
    return reject(CallbackError::bad_signature, "notification for app_id " + (app ? *app : std::string("(none)")));
  const std::string* notify_id = find(*params, "notify_id");
  const std::string* out_trade_no = find(*params, "out_trade_no");
  if (!notify_id || !out_trade_no)
    return reject(CallbackError::malformed, "notification without notify_id or out_trade_no");

  CallbackCheck check;
  check.verified = true;
  check.ack_body = "success";
  CallbackEvent event;
  event.event_id = *notify_id;
  if (const std::string* trade_no = find(*params, "trade_no")) event.vendor_reference = *trade_no;
  const std::string* out_biz_no = find(*params, "out_biz_no");
  if (out_biz_no && find(*params, "refund_fee")) {
    event.kind = OperationKind::refund;
    event.client_key = *out_biz_no;
    event.outcome = VendorOutcome::succeeded;
    event.vendor_reference = *out_biz_no;
    check.events.push_back(std::move(event));
    return check;
  }
  const std::string* state = find(*params, "trade_status");
  const std::string status = state ? *state : std::string();
  event.client_key = *out_trade_no;
  if (status == "TRADE_SUCCESS" || status == "TRADE_FINISHED") {
    event.outcome = VendorOutcome::succeeded;
  } else if (status == "TRADE_CLOSED") {
    event.outcome = VendorOutcome::declined;
    event.decline_code = status;
  } else if (status == "WAIT_BUYER_PAY") {
    event.outcome = VendorOutcome::pending;
  } else {
    check.detail = "trade_status \"" + status + "\": nothing payorch tracks";
    return check;
  }
  if (const std::string* amount = find(*params, "total_amount")) {
    const auto minor = minor_of_yuan(*amount);
    if (!minor) return reject(CallbackError::malformed, "total_amount \"" + *amount + "\" is not an amount");
    event.amount_minor = *minor;
    event.currency = "CNY";
  }
  check.events.push_back(std::move(event));
  return check;
}

}  // namespace payorch::providers::alipay
