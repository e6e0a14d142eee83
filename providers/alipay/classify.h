#pragma once
// What an Alipay OpenAPI answer means (docs/contract.md §5, docs/vendors.md "alipay"), as pure
// functions of the HTTP result and what was sent. Every answer is first checked: a 200 with a
// JSON body whose "<method>_response" member is signed RSA2 with the Alipay public key (the
// signature over the member's text as written). Anything else proves nothing: `ambiguous`
// (401/403: `auth_refused`; not sent: `not_sent`; sent without an answer: `ambiguous`).
//
// Gateway codes (公共错误码, https://opendocs.alipay.com/common/02km9f):
//   10000 (接口调用成功)                 → the call's own table below
//   10003 (alipay.trade.pay only: waiting for the buyer, WAIT_BUYER_PAY) → pending
//   20000 (服务不可用)                   → ambiguous
//   20001 (授权权限不足)                 → auth_refused
//   40001 / 40002 (missing / invalid arguments: the gateway refused the request, nothing done)
//         isv.invalid-signature, isv.invalid-app-id (our key or app refused) → auth_refused;
//         otherwise submit and refund: declined, decline_code = sub_code; query, close,
//         refund query: ambiguous
//   40004 (业务处理失败)                 → the call's sub_code table below
//   anything else                        → ambiguous
//
// alipay.trade.pay / alipay.trade.precreate (submit), sub_codes of 40004
// (https://docs.open.alipay.com/api_1/alipay.trade.pay, the face-to-face error table
// https://open.alitrip.com/docs/doc.htm?articleId=104632&docType=1&treeId=140):
//   pay 10000                             → succeeded (trade_no; out_trade_no and total_amount
//                                           must be what was sent, else ambiguous)
//   precreate 10000                       → pending (the buyer scans qr_code later)
//   ACQ.SYSTEM_ERROR                      → ambiguous ("call the inquiry API")
//   ACQ.TRADE_HAS_SUCCESS                 → ambiguous (paid: the query confirms amount and id)
//   ACQ.CONTEXT_INCONSISTENT, ACQ.TRADE_BUYER_NOT_MATCH → ambiguous (an order with this number
//                                           exists with other parameters)
//   ACQ.TRADE_HAS_CLOSE                   → declined (this order is closed)
//   ACQ.INVALID_PARAMETER, ACQ.ACCESS_FORBIDDEN, ACQ.EXIST_FORBIDDEN_WORD, ACQ.PARTNER_ERROR,
//   ACQ.TOTAL_FEE_EXCEED, ACQ.BUYER_SELLER_EQUAL, ACQ.BUYER_ENABLE_STATUS_FORBID,
//   ACQ.BUYER_PAYMENT_AMOUNT_DAY_LIMIT_ERROR, ACQ.BEYOND_PAY_RESTRICTION,
//   ACQ.PAYMENT_AUTH_CODE_INVALID, ACQ.BUYER_BALANCE_NOT_ENOUGH
//                                         → declined, decline_code = the sub_code
//   any other sub_code                    → ambiguous
//
// alipay.trade.query (https://docs.open.alipay.com/api_1/alipay.trade.query):
//   10000 trade_status TRADE_SUCCESS, TRADE_FINISHED → succeeded (amount checked)
//         WAIT_BUYER_PAY                  → pending
//         TRADE_CLOSED                    → declined, decline_code TRADE_CLOSED
//         other                           → ambiguous
//   ACQ.TRADE_NOT_EXIST                   → not_found (never final by itself: a precreate
//                                           order exists only once the buyer scans it)
//   other sub_codes                       → ambiguous
//
// alipay.trade.close, the fence (https://docs.open.alipay.com/api_1/alipay.trade.close; it
// closes an unpaid order — alipay.trade.cancel would refund a paid one and is not used):
//   10000                                 → succeeded (closed now)
//   ACQ.TRADE_NOT_EXIST                   → not_found
//   ACQ.TRADE_STATUS_ERROR, ACQ.REASON_ILLEGAL_STATUS, ACQ.REASON_TRADE_STATUS_INVALID
//                                         → declined, decline_code = the sub_code (the order
//                                           is not waiting for payment: paid, or already
//                                           closed); the adapter then asks alipay.trade.query
//                                           and fence_after_refusal says which
//   other sub_codes                       → ambiguous
//
// alipay.trade.refund (https://docs.open.alipay.com/api_1/alipay.trade.refund), out_request_no
// = the refund's client_key. 10000 only says the call was taken; whether money moved is
// fund_change ("本次退款是否发生了资金变化"; "code 10000 只是表示退款接口调用成功，实际是否退款成功
// 需要依据 fund_change 来判断", https://developer.aliyun.com/article/707647, with the refund query
// as the other way to tell):
//   10000, fund_change "Y"                → succeeded
//   10000, fund_change "N" or none        → pending: a repeat with the same out_request_no
//                                           answers "N", and so may a refund not made; the
//                                           refund query below decides
//   ACQ.SYSTEM_ERROR                      → ambiguous
//   ACQ.TRADE_NOT_EXIST, ACQ.TRADE_STATUS_ERROR, ACQ.REASON_TRADE_REFUND_FEE_ERR,
//   ACQ.REFUND_AMT_NOT_EQUAL_TOTAL, ACQ.SELLER_BALANCE_NOT_ENOUGH, ACQ.TRADE_HAS_FINISHED,
//   ACQ.INVALID_PARAMETER                 → declined, decline_code = the sub_code
//   other sub_codes                       → ambiguous
//
// alipay.trade.fastpay.refund.query
// (https://docs.open.alipay.com/api_1/alipay.trade.fastpay.refund.query: "如果该接口返回了查询
// 数据，则代表退款成功，如果没有查询到则代表未退款成功"):
//   10000 refund_status REFUND_SUCCESS, or refund data without refund_status
//                                         → succeeded (refund_amount must be what was sent)
//   10000 without refund data             → not_found
//   10000 another refund_status           → ambiguous
//   ACQ.TRADE_NOT_EXIST                   → not_found
//   other sub_codes                       → ambiguous
#include <string>

#include "net/http_types.h"
#include "providers/adapter.h"

namespace payorch::providers::alipay {

enum class Product { pay, precreate };

VendorResult classify_submit(const net::HttpResult& res, const ChargeRequest& sent, Product product,
                             const std::string& alipay_public_key);
VendorResult classify_query(const net::HttpResult& res, const ChargeRequest& sent,
                            const std::string& alipay_public_key);
VendorResult classify_close(const net::HttpResult& res, const ChargeRequest& sent,
                            const std::string& alipay_public_key);
// A close refused because the order is not waiting for payment (`closed` declined), read with
// the query that followed (`asked`): TRADE_CLOSED (already closed, unpaid) → succeeded;
// paid (succeeded) → declined with the close's sub_code; anything else → ambiguous, with both
// answers in the detail. (A trade fully refunded is TRADE_CLOSED too; payorch never fences a
// payment it knows succeeded.)
VendorResult fence_after_refusal(const VendorResult& closed, const VendorResult& asked);

VendorResult classify_refund(const net::HttpResult& res, const RefundRequest& sent,
                             const std::string& alipay_public_key);
VendorResult classify_refund_query(const net::HttpResult& res, const RefundRequest& sent,
                                   const std::string& alipay_public_key);

}  // namespace payorch::providers::alipay
