#pragma once
// Alipay OpenAPI's gateway dialect (common request parameters: e.g.
// https://docs.open.alipay.com/api_1/alipay.trade.close; signing, "OpenAPI 2.0 签名":
// https://opendocs.alipay.com/common/02kf5q, as alipay-sdk 4.14.0 implements it): every call is a POST of
// form-encoded common parameters (app_id, method, format, charset, sign_type, timestamp,
// version, notify_url) with the call's own parameters as the JSON text `biz_content`, signed
// RSA2 (SHA256WithRSA, base64) over the parameters other than `sign`, sorted by name, written
// `k=v&k=v` (empty values left out). The answer is JSON {"<method with _ for .>_response": {…},
// "sign": "…"}, signed RSA2 over the response member's text exactly as it appears in the body.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/object.hpp>

namespace payorch::providers::alipay {

using Params = std::map<std::string, std::string>;  // sorted by name, as the signature wants

// "k=v&k=v" over `params` in name order, without `sign` and without empty values (the request
// signing content), and without `sign_type` too when `drop_sign_type` (the async notification
// content: "除去sign、sign_type两个参数外，凡是通知返回回来的参数皆是待验签的参数", then
// url-decoded and sorted; alipay-sdk's checkNotifySign does the same).
// `keep_empty`: empty values written too ("k=") — how alipay-sdk's checkNotifySign reads a
// notification.
std::string signing_content(const Params& params, bool drop_sign_type, bool keep_empty = false);

// application/x-www-form-urlencoded, every byte outside RFC 3986's unreserved set percent-encoded.
std::string form_encode(const Params& params);

// Decodes an application/x-www-form-urlencoded body ('+' is a space). nullopt for a malformed
// escape or a name given twice (two values for one signed name prove nothing).
std::optional<Params> form_decode(std::string_view body);

// "yyyy-MM-dd HH:mm:ss" in China Standard Time (UTC+8), the gateway's `timestamp`.
std::string gateway_timestamp(std::int64_t unix_s);

// "12.34" for 1234 minor units of CNY (two decimals); amounts as the OpenAPI writes them.
std::string yuan_text(std::int64_t minor);
// The minor units of a "12.34" / "12.3" / "12" amount; nullopt for anything else.
std::optional<std::int64_t> minor_of_yuan(std::string_view text);

// The text of the top-level member `key`'s value in the JSON object `body`, exactly as written
// (what the answer's signature covers); nullopt when there is no such member or the body is
// not a JSON object.
std::optional<std::string_view> member_text(std::string_view body, std::string_view key);

// "alipay_trade_pay_response" for "alipay.trade.pay".
std::string response_key(std::string_view method);

// A verified answer: the response member's object; `why` says what failed otherwise.
struct Answer {
  boost::json::object response;
  std::string code;      // "10000", "10003", "40004", …
  std::string sub_code;  // "ACQ.TRADE_NOT_EXIST", …; empty when absent
  std::string said;      // code/sub_code/sub_msg for the detail
};
std::optional<Answer> read_answer(const std::string& body, std::string_view method,
                                  const std::string& alipay_public_key, std::string& why);

}  // namespace payorch::providers::alipay
