#include "providers/alipay/alipay_adapter.h"

#include <boost/asio/dispatch.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <chrono>
#include <utility>

#include "providers/alipay/gateway.h"
#include "providers/alipay/notification.h"
#include "providers/rsa_sha256.h"

namespace payorch::providers::alipay {
namespace {

namespace json = boost::json;

std::string text_of(const json::object& o) { return json::serialize(o); }

// The gateway's timestamp is the one clock reading here: the adapter is the I/O edge.
std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

AlipayAdapter::AlipayAdapter(const config::Provider& provider, boost::asio::any_io_executor ex,
                             net::HttpClient& client)
    : base_url_(provider.base_url),
      app_id_(provider.options.app_id),
      secrets_(provider),
      product_(provider.options.product == "precreate" ? Product::precreate : Product::pay),
      order_expiry_(std::to_string(provider.options.order_expiry.count() / 60'000) + "m"),
      notify_url_(provider.options.notify_url),
      connect_timeout_(provider.timeouts.connect),
      request_timeout_(provider.contract.request_timeout),
      ex_(std::move(ex)),
      client_(client) {}

std::optional<net::Request> AlipayAdapter::gateway_request(const std::string& method,
                                                           const std::string& biz_content,
                                                           bool with_notify_url,
                                                           std::int64_t unix_s) const {
  Params params{{"app_id", app_id_},           {"method", method},
                {"format", "JSON"},             {"charset", "utf-8"},
                {"sign_type", "RSA2"},          {"timestamp", gateway_timestamp(unix_s)},
                {"version", "1.0"},             {"biz_content", biz_content}};
  if (with_notify_url && !notify_url_.empty()) params.emplace("notify_url", notify_url_);
  auto sign = rsa_sha256_sign_base64(secrets_.adapter_keys()->private_key, signing_content(params, false));
  if (!sign) return std::nullopt;
  params.emplace("sign", std::move(*sign));
  net::Request http;
  http.method = "POST";
  http.url = base_url_;
  http.headers = {{"Content-Type", "application/x-www-form-urlencoded;charset=utf-8"},
                  {"Accept", "application/json"}};
  http.body = form_encode(params);
  http.connect_timeout = connect_timeout_;
  http.timeout = request_timeout_;
  return http;
}

void AlipayAdapter::call(const std::string& method, const std::string& biz_content,
                         bool with_notify_url, Classify classify, ResultHandler done) {
  auto http = gateway_request(method, biz_content, with_notify_url, unix_now());
  if (!http) {
    // Nothing left: a key config accepted but OpenSSL cannot sign with.
    boost::asio::dispatch(ex_, [done = std::move(done)]() mutable {
      done(outcome_only(VendorOutcome::not_sent, 0, "the private key cannot sign"));
    });
    return;
  }
  send_classified(client_, ex_, std::move(*http), std::move(classify), std::move(done));
}

void AlipayAdapter::submit(const ChargeRequest& req, ResultHandler done) {
  json::object biz{{"out_trade_no", req.client_key},
                   {"total_amount", yuan_text(req.amount_minor)},
                   {"subject", req.payee.empty() ? req.client_key : req.payee}};
  if (req.currency != "CNY") {
    // The domestic OpenAPI charges CNY only: refused before anything is sent.
    boost::asio::dispatch(ex_, [done = std::move(done), currency = req.currency]() mutable {
      VendorResult r = outcome_only(VendorOutcome::declined, 0, "Alipay charges CNY, not " + currency);
      r.decline_code = "currency_not_supported";
      done(std::move(r));
    });
    return;
  }
  std::string method = "alipay.trade.precreate";
  if (product_ == Product::pay) {
    method = "alipay.trade.pay";
    biz["scene"] = "bar_code";
    biz["auth_code"] = req.source;
  } else {
    // The QR code can be scanned, and the order it makes paid, until this has passed: after
    // that an order Alipay does not know never will be (Contract::order_expiry).
    biz["qr_code_timeout_express"] = order_expiry_;
    biz["timeout_express"] = order_expiry_;
  }
  call(method, text_of(biz), true,
       [req, product = product_, key = alipay_public_key()](const net::HttpResult& res) {
         return classify_submit(res, req, product, key);
       },
       std::move(done));
}

void AlipayAdapter::query(const ChargeRequest& req, ResultHandler done) {
  call("alipay.trade.query", text_of(json::object{{"out_trade_no", req.client_key}}), false,
       [req, key = alipay_public_key()](const net::HttpResult& res) { return classify_query(res, req, key); },
       std::move(done));
}

// alipay.trade.close answers ACQ.TRADE_STATUS_ERROR both for a paid order and for one already
// closed; a query tells them apart (fence_after_refusal). The query is signed now and carried
// along, so that the adapter may be gone when the close's answer arrives.
void AlipayAdapter::fence(const ChargeRequest& req, ResultHandler done) {
  const std::string by_number = text_of(json::object{{"out_trade_no", req.client_key}});
  auto follow_up = gateway_request("alipay.trade.query", by_number, false, unix_now());
  auto then = [done = std::move(done), follow_up = std::move(follow_up), &client = client_, ex = ex_, req,
               key = alipay_public_key()](VendorResult closed) mutable {
    if (closed.outcome != VendorOutcome::declined || !follow_up) return done(std::move(closed));
    send_classified(
        client, ex, std::move(*follow_up),
        [req, key](const net::HttpResult& res) { return classify_query(res, req, key); },
        [done = std::move(done), closed = std::move(closed)](VendorResult asked) mutable {
          done(fence_after_refusal(closed, asked));
        });
  };
  call("alipay.trade.close", by_number, false,
       [req, key = alipay_public_key()](const net::HttpResult& res) { return classify_close(res, req, key); },
       std::move(then));
}

void AlipayAdapter::refund(const RefundRequest& req, ResultHandler done) {
  const json::object biz{{"out_trade_no", req.charge_client_key},
                         {"refund_amount", yuan_text(req.amount_minor)},
                         {"out_request_no", req.client_key}};
  call("alipay.trade.refund", text_of(biz), false,
       [req, key = alipay_public_key()](const net::HttpResult& res) { return classify_refund(res, req, key); },
       std::move(done));
}

void AlipayAdapter::query_refund(const RefundRequest& req, ResultHandler done) {
  const json::object biz{{"out_trade_no", req.charge_client_key}, {"out_request_no", req.client_key}};
  call("alipay.trade.fastpay.refund.query", text_of(biz), false,
       [req, key = alipay_public_key()](const net::HttpResult& res) {
         return classify_refund_query(res, req, key);
       },
       std::move(done));
}

CallbackCheck AlipayAdapter::verify_and_parse(const std::map<std::string, std::string>&,
                                              const std::string& body, std::int64_t) const {
  return verify_notification(body, app_id_, alipay_public_key());
}

std::string AlipayAdapter::alipay_public_key() const { return secrets_.adapter_keys()->alipay_public_key; }

}  // namespace payorch::providers::alipay
