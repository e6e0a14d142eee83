#pragma once
// Alipay's asynchronous notifications (异步通知): a form-encoded POST to notify_url, signed RSA2
// by Alipay over every parameter but sign and sign_type, url-decoded and sorted (gateway.h
// signing_content; an empty parameter signed or left out, as Alipay's pages and alipay-sdk
// differ on it); acknowledged with the body "success" (anything else is sent again: 8 times
// within 25 hours, https://docs.antom.com/ac/web_cn/async). There is no signed timestamp, so
// no staleness check: notify_id is the delivery's id (inbox deduplication).
//
// What a verified notification says (notify_type trade_status_sync):
//   out_biz_no and refund_fee present (a refund's notification; out_biz_no is the refund's
//   out_request_no)                              → refund event, succeeded, client_key = out_biz_no
//   trade_status TRADE_SUCCESS, TRADE_FINISHED  → charge succeeded (trade_no, total_amount)
//   trade_status TRADE_CLOSED                   → charge declined, decline_code TRADE_CLOSED
//   trade_status WAIT_BUYER_PAY                 → charge pending
//   anything else                               → verified, no event (acknowledged only)
// A notification for another app_id is refused (bad_signature: not for us).
#include <string>

#include "providers/adapter.h"

namespace payorch::providers::alipay {

CallbackCheck verify_notification(const std::string& body, const std::string& app_id,
                                  const std::string& alipay_public_key);

}  // namespace payorch::providers::alipay
