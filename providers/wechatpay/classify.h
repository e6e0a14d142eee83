#pragma once
// What a WeChat Pay API v3 answer means (docs/contract.md §3, §5, §9; docs/vendors.md
// "WeChat Pay"), as pure functions of a verified HTTP answer and what was sent. Fields and
// states come from the OpenAPI description of WeChat Pay v3 at
// github.com/TheNorthMemory/wechatpay-openapi (definitions/Transaction.yaml,
// definitions/Enumerations.yaml TransactionTradeState and RefundStatus, the path files); error
// codes from the official pages cited below. The adapter checks the answer's signature first (signing.h): an answer
// that does not verify is `ambiguous`, whatever it says.
//
// Errors, any call (body {code, message}; https://pay.weixin.qq.com/wiki/doc/api/wxpay/ch/pages/ico-guide/chapter1_6.shtml:
// 4xx = the request was refused, 5xx = a system error, retry with the same request; codes:
// https://pay.weixin.qq.com/docs/partner/apis/partner-miniprogram-payment/close-order.html):
//   transport not_sent                        → not_sent
//   transport sent_no_answer                  → ambiguous
//   401 (SIGN_ERROR)                          → auth_refused
//   403 OUT_TRADE_NO_USED                     → ambiguous (an order exists under this key;
//                                               the query says what it is)
//   403 RULE_LIMIT, 429 FREQUENCY_LIMITED     → ambiguous (try again later)
//   403 NOT_ENOUGH (余额不足)                  → declined, decline_code NOT_ENOUGH
//   403 any other code (NO_AUTH, …)           → auth_refused
//   400 PARAM_ERROR, INVALID_REQUEST,
//       APPID_MCHID_NOT_MATCH, MCH_NOT_EXISTS → declined, decline_code = the code (nothing done);
//                                               but to a query (order or refund) ambiguous, as
//                                               403 NOT_ENOUGH is: a refused query says nothing
//                                               about the order (a wrong mchid after a change of
//                                               configuration refuses every query of an order
//                                               the payer can still pay)
//   5xx (SYSTEM_ERROR), anything else         → ambiguous
//
// Order creation, POST /v3/pay/transactions/{native,jsapi} (native.yaml, jsapi.yaml):
//   200 with code_url (native) / prepay_id (jsapi) → pending: the order waits for the user
//   200 without it                            → ambiguous
//   400 ORDER_CLOSED                          → declined, ORDER_CLOSED (closed, never paid)
// Order creation, POST /v3/pay/transactions/codepay (codepay.yaml): 200 {trade_state, …} as
//   for the query below (USERPAYING → pending); an error body with code USERPAYING (how v2's
//   micropay said 需要用户输入支付密码) → pending too.
//
// Query, GET /v3/pay/transactions/out-trade-no/{out_trade_no}?mchid= (TransactionTradeState):
//   SUCCESS, REFUND (paid, then refunded)     → succeeded, vendor_reference = transaction_id,
//                                               amount_minor/currency = amount.total/currency
//   NOTPAY, USERPAYING                        → pending
//   CLOSED, REVOKED, PAYERROR                 → declined, decline_code = the state
//   any other or missing trade_state          → ambiguous
//   out_trade_no, or (SUCCESS/REFUND) amount
//   total/currency not what was sent          → ambiguous
//   404 ORDER_NOT_EXIST                       → not_found
//
// Close, POST …/out-trade-no/{out_trade_no}/close (close.yaml: 204, no body):
//   204                                       → succeeded (closed now; a late payment is
//                                               impossible)
//   400 ORDER_CLOSED                          → succeeded (already closed: unpaid)
//   any status with ORDERPAID (订单已支付,
//   https://pay.weixin.qq.com/wiki/doc/api_external/ch/apis/chapter3_5_7.shtml)
//                                             → declined, decline_code ORDERPAID
//   404 ORDER_NOT_EXIST                       → not_found
//   403 RULE_LIMIT (too early: the docs allow a close 5 minutes after creation at the
//   earliest), 5xx, anything else             → ambiguous (401 → auth_refused)
//
// Refund, POST /v3/refund/domestic/refunds and GET …/refunds/{out_refund_no} (RefundStatus;
// the official pages spell the closed state CLOSED, the community enum CLOSE: both read):
//   SUCCESS                                   → succeeded, vendor_reference = refund_id
//   PROCESSING                                → pending
//   CLOSED / CLOSE                            → declined, decline_code = the status
//   ABNORMAL (the money did not reach the
//   user; the merchant must act)              → ambiguous
//   any other or missing status               → ambiguous
//   out_refund_no, amount.refund or currency
//   not what was sent                         → ambiguous
//   404 RESOURCE_NOT_EXISTS (query)           → not_found
#include <boost/json/object.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "net/http_types.h"
#include "providers/adapter.h"

namespace payorch::providers::wechatpay {

// The trade_state rows of the query table (pending / succeeded / declined / ambiguous).
VendorOutcome trade_state_outcome(std::string_view state);
// The RefundStatus rows of the refund table.
VendorOutcome refund_status_outcome(std::string_view status);

// `res` must be a complete response whose signature verified.
VendorResult classify_order(const net::HttpResult& res, const ChargeRequest& sent, const std::string& product);
VendorResult classify_query(const net::HttpResult& res, const ChargeRequest& sent);
VendorResult classify_close(const net::HttpResult& res);
// `query`: the answer of GET …/refunds/{out_refund_no} (404 RESOURCE_NOT_EXISTS → not_found);
// otherwise of the POST (404 → ambiguous).
VendorResult classify_refund(const net::HttpResult& res, const RefundRequest& sent, bool query);

// The amount.total of a query answer (200) about a paid order (trade_state SUCCESS or REFUND);
// nullopt otherwise. The refund must name it.
std::optional<std::int64_t> paid_order_total(const net::HttpResult& res);

// A transaction object (a query answer, a codepay answer, a callback's decrypted resource)
// read with the query table; `sent` (when given) is what it must match.
VendorResult read_transaction(const boost::json::object& t, const ChargeRequest* sent, int http_status);
// A refund object (an answer, or a callback's resource: amount {refund, total, …}); `sent`
// (when given) is what it must match. currency is read when present (callbacks omit it).
VendorResult read_refund(const boost::json::object& r, const RefundRequest* sent, int http_status);

}  // namespace payorch::providers::wechatpay
