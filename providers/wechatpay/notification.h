#pragma once
// WeChat Pay API v3 callbacks (docs/contract.md §6, docs/vendors.md "WeChat Pay"): a JSON body
// {id, create_time, event_type, resource_type: "encrypt-resource", summary,
//  resource: {algorithm: "AEAD_AES_256_GCM", ciphertext, nonce, associated_data, original_type}}
// signed like an answer (Wechatpay-Timestamp/-Nonce/-Signature/-Serial, signing.h), the
// resource encrypted with the APIv3 key
// (https://pay.weixin.qq.com/docs/merchant/apis/h5-payment/payment-notice.html,
//  https://pay.weixin.qq.com/wiki/doc/apiv3/apis/chapter3_2_5.shtml).
// Acknowledgement: HTTP 200 or 204, no body needed; payorch's own JSON 200 does (the docs: a
// 200 ends the retries, https://developers.weixin.qq.com/community/pay/doc/000e4c3d4a83607545eb97f5856c00),
// so ack_body stays nullopt. Retries: 15s/15s/30s/3m/10m/20m/30m/30m/30m/60m/3h/3h/3h/6h/6h,
// 24h4m in all (chapter3_2_5 above).
//
// Order of checks: the four headers and the serial (→ bad_signature), the signature over the
// raw body (→ bad_signature), the timestamp within `tolerance` of now (→ stale_timestamp),
// the JSON (→ malformed), the resource's algorithm and its decryption (a tag that does not
// verify → bad_signature: the resource is not the vendor's), the plaintext (→ malformed).
//
// What payorch reads (one CallbackEvent, event_id = the notification's id):
//   TRANSACTION.SUCCESS (resource: a transaction) → the charge, client_key = out_trade_no,
//       outcome by trade_state (the query table: SUCCESS → succeeded, CLOSED/REVOKED/PAYERROR
//       → declined, NOTPAY/USERPAYING → pending), vendor_reference = transaction_id, amount
//       total/currency. A state the table calls ambiguous: verified, no event.
//   REFUND.SUCCESS / REFUND.CLOSED / REFUND.ABNORMAL (resource: a refund with refund_status)
//       → the refund, client_key = out_refund_no, outcome by refund_status (SUCCESS →
//       succeeded, CLOSED → declined; ABNORMAL: verified, no event — the query and an operator
//       decide), vendor_reference = refund_id, amount = amount.refund
//       (https://pay.weixin.qq.com/doc/v3/merchant/4012082053).
//   any other event_type → verified, no event.
#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "providers/adapter.h"

namespace payorch::providers::wechatpay {

struct CallbackKeys {
  std::string platform_serial;
  std::string platform_public_key;  // PEM
  std::string api_v3_key;           // 32 bytes
  std::chrono::milliseconds tolerance{300'000};
};

CallbackCheck verify_notification(const std::map<std::string, std::string>& headers, const std::string& body,
                                  std::int64_t now_unix_s, const CallbackKeys& keys);

}  // namespace payorch::providers::wechatpay
