#include "providers/adyen/adyen_adapter.h"

#include <boost/asio/dispatch.hpp>

#include <utility>

#include "providers/adyen/classify.h"
#include "providers/adyen/notification.h"
#include "providers/adyen/request.h"
#include "providers/vendor_call.h"

namespace payorch::providers::adyen {

AdyenAdapter::AdyenAdapter(const config::Provider& provider, boost::asio::any_io_executor ex,
                           net::HttpClient& client)
    : base_url_(provider.base_url),
      secrets_(provider),
      merchant_account_(provider.options.merchant_account),
      connect_timeout_(provider.timeouts.connect),
      request_timeout_(provider.contract.request_timeout),
      ex_(std::move(ex)),
      client_(client) {}

net::Request AdyenAdapter::post(std::string path, const std::string& idempotency_key,
                                std::string body) const {
  net::Request http;
  http.method = "POST";
  http.url = base_url_ + path;
  http.headers = {{"X-API-Key", secrets_.api_key()},
                  {"Accept", "application/json"},
                  {"Content-Type", "application/json"},
                  {"idempotency-key", idempotency_key}};
  http.body = std::move(body);
  http.connect_timeout = connect_timeout_;
  http.timeout = request_timeout_;
  return http;
}

// The classification runs when the answer arrives, on the client's executor; the result is
// handed over on the adapter's.
void AdyenAdapter::send(net::Request http, Classify classify, ResultHandler done) {
  send_classified(client_, ex_, std::move(http), std::move(classify), std::move(done));
}

void AdyenAdapter::unsupported(std::string what, ResultHandler done) {
  boost::asio::dispatch(ex_, [done = std::move(done), what = std::move(what)]() mutable {
    done(VendorResult{VendorOutcome::unsupported, {}, {}, {}, {}, 0, std::move(what)});
  });
}

void AdyenAdapter::submit(const ChargeRequest& req, ResultHandler done) {
  send(post("/payments", req.client_key, payment_body(req, merchant_account_)),
       [req](const net::HttpResult& res) { return classify_payment(res, req); }, std::move(done));
}

void AdyenAdapter::query(const ChargeRequest&, ResultHandler done) {
  unsupported("Adyen Checkout offers no lookup by reference (recovery: replay)", std::move(done));
}

void AdyenAdapter::refund(const RefundRequest& req, ResultHandler done) {
  send(post("/payments/" + path_segment(req.charge_reference) + "/refunds", req.client_key,
            refund_body(req, merchant_account_)),
       [req, account = merchant_account_](const net::HttpResult& res) {
         return classify_refund(res, req, account);
       },
       std::move(done));
}

void AdyenAdapter::query_refund(const RefundRequest&, ResultHandler done) {
  unsupported("Adyen Checkout offers no refund lookup by reference (recovery: replay)",
              std::move(done));
}

// The cancel gets its own idempotency key: the payment's key names the payment request, and
// Adyen keys are unique per company account across endpoints.
void AdyenAdapter::fence(const ChargeRequest& req, ResultHandler done) {
  send(post("/cancels", req.client_key + "-cancel", cancel_body(req, merchant_account_)),
       [req, account = merchant_account_](const net::HttpResult& res) {
         return classify_cancel(res, req, account);
       },
       std::move(done));
}

CallbackCheck AdyenAdapter::verify_and_parse(const std::map<std::string, std::string>&,
                                             const std::string& body, std::int64_t) const {
  return verify_notification(body, secrets_.callback_secret());
}

}  // namespace payorch::providers::adyen
