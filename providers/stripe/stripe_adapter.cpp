#include "providers/stripe/stripe_adapter.h"

#include <boost/asio/dispatch.hpp>

#include <utility>

#include "providers/stripe/classify.h"
#include "providers/stripe/object.h"
#include "providers/vendor_call.h"

namespace payorch::providers::stripe {

FormFields payment_intent_fields(const ChargeRequest& req) {
  return {{"amount", std::to_string(req.amount_minor)},
          {"currency", lower(req.currency)},
          {"payment_method", req.source},
          {"confirm", "true"},
          {"automatic_payment_methods[enabled]", "true"},
          {"automatic_payment_methods[allow_redirects]", "never"},
          {"metadata[client_key]", req.client_key},
          {"metadata[payee]", req.payee}};
}

FormFields refund_fields(const RefundRequest& req) {
  return {{"payment_intent", req.charge_reference},
          {"amount", std::to_string(req.amount_minor)},
          {"metadata[client_key]", req.client_key}};
}

StripeAdapter::StripeAdapter(const config::Provider& provider, boost::asio::any_io_executor ex,
                             net::HttpClient& client)
    : base_url_(provider.base_url),
      secrets_(provider),
      connect_timeout_(provider.timeouts.connect),
      request_timeout_(provider.contract.request_timeout),
      callback_tolerance_(provider.callback.tolerance),
      ex_(std::move(ex)),
      client_(client) {}

// https://docs.stripe.com/api/authentication (Bearer), https://docs.stripe.com/api/idempotent_requests
net::Request StripeAdapter::idempotent_post(std::string path, const std::string& client_key,
                                            const FormFields& fields) const {
  net::Request http;
  http.method = "POST";
  http.url = base_url_ + path;
  http.headers = {{"Authorization", "Bearer " + secrets_.api_key()},
                  {"Accept", "application/json"},
                  {"Content-Type", "application/x-www-form-urlencoded"},
                  {"Idempotency-Key", client_key}};
  http.body = form_encode(fields);
  http.connect_timeout = connect_timeout_;
  http.timeout = request_timeout_;
  return http;
}

void StripeAdapter::send(net::Request http, Classify classify, ResultHandler done) {
  send_classified(client_, ex_, std::move(http), std::move(classify), std::move(done));
}

void StripeAdapter::submit(const ChargeRequest& req, ResultHandler done) {
  send(idempotent_post("/v1/payment_intents", req.client_key, payment_intent_fields(req)),
       [req](const net::HttpResult& res) { return classify_submit(res, req); }, std::move(done));
}

void StripeAdapter::refund(const RefundRequest& req, ResultHandler done) {
  send(idempotent_post("/v1/refunds", req.client_key, refund_fields(req)),
       [req](const net::HttpResult& res) { return classify_refund(res, req); }, std::move(done));
}

namespace {

void answer_unsupported(const boost::asio::any_io_executor& ex, ResultHandler done) {
  boost::asio::dispatch(ex, [done = std::move(done)]() mutable {
    done(VendorResult{VendorOutcome::unsupported, {}, {}, {}, {}, 0,
                      "stripe: no strongly consistent lookup by client_key; recovery is replay"});
  });
}

}  // namespace

void StripeAdapter::query(const ChargeRequest&, ResultHandler done) {
  answer_unsupported(ex_, std::move(done));
}

void StripeAdapter::query_refund(const RefundRequest&, ResultHandler done) {
  answer_unsupported(ex_, std::move(done));
}

CallbackCheck StripeAdapter::verify_and_parse(const std::map<std::string, std::string>& headers,
                                              const std::string& body,
                                              std::int64_t now_unix_s) const {
  // The secret as it is now: a reload (SIGHUP) may have rotated it.
  return verify_callback(headers, body, now_unix_s,
                         CallbackKey{secrets_.callback_secret(), callback_tolerance_});
}

}  // namespace payorch::providers::stripe
