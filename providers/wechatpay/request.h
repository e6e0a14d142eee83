#pragma once
// The WeChat Pay API v3 requests payorch sends (docs/vendors.md "WeChat Pay"), built from the
// OpenAPI description at github.com/TheNorthMemory/wechatpay-openapi
// (v3/pay/transactions/{native,jsapi,codepay}.yaml,
// …/out-trade-no/{out_trade_no}.yaml and …/close.yaml, v3/refund/domestic/refunds.yaml and
// refunds/{out_refund_no}.yaml; definitions/Transaction.yaml).
#include <cstdint>
#include <string>

#include "providers/adapter.h"

namespace payorch::providers::wechatpay {

// What every request names: the merchant, the app orders are made for, where callbacks go.
struct Merchant {
  std::string mchid;
  std::string appid;
  std::string notify_url;
};

// out_trade_no and out_refund_no: at most 32 characters of digits, letters, '_' and '-' (the
// docs allow '*' and '|' too: 商户订单号 "只能是数字、大小写字母_-*", close page
// https://pay.weixin.qq.com/docs/partner/apis/partner-miniprogram-payment/close-order.html).
// payorch's client_keys ("ck_" + a 26-character ULID, core/ids.h) always fit.
bool valid_out_trade_no(const std::string& key);

// The product's order path under base_url: /v3/pay/transactions/native | jsapi | codepay.
std::string order_path(const std::string& product);

// The order body: TransactionDirection (appid, mchid) + OrderBase (description, out_trade_no,
// amount {total, currency}) + notify_url; jsapi adds payer.openid = the intent's `source`,
// codepay payer.auth_code = `source` and scene_info.store_info {} (required by codepay.yaml;
// codepay takes no notify_url). description = the payee (商品描述, required), or the
// client_key when the payee is empty.
std::string order_body(const std::string& product, const ChargeRequest& req, const Merchant& m);

// GET /v3/pay/transactions/out-trade-no/{out_trade_no}?mchid=…
std::string query_path(const std::string& out_trade_no, const std::string& mchid);
// POST …/out-trade-no/{out_trade_no}/close with {"mchid"}.
std::string close_path(const std::string& out_trade_no);
std::string close_body(const std::string& mchid);

// POST /v3/refund/domestic/refunds: out_trade_no (the charge's client_key), out_refund_no (the
// refund's client_key), notify_url, amount {refund, total (the order's total, required), currency}.
std::string refund_body(const RefundRequest& req, std::int64_t order_total, const std::string& notify_url);
// GET /v3/refund/domestic/refunds/{out_refund_no}
std::string refund_query_path(const std::string& out_refund_no);

}  // namespace payorch::providers::wechatpay
