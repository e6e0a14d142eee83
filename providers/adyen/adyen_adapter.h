#pragma once
// The adapter for Adyen's Checkout API v71 (docs/contract.md §9): POST {base_url}/payments with
// X-API-Key and the client_key as idempotency-key and reference; refunds by
// POST /payments/{pspReference}/refunds with the refund's own key; the vendor-side fence is
// POST /cancels by our reference; HMAC-signed standard webhooks acknowledged "[accepted]".
// Checkout offers no lookup by our reference: recovery is `replay` (re-send with the same
// idempotency key, https://docs.adyen.com/development-resources/api-idempotency), so query and
// query_refund answer `unsupported`. base_url includes the version, e.g.
// https://checkout-test.adyen.com/v71.
#include <boost/asio/any_io_executor.hpp>

#include <functional>
#include <string>

#include "config/config.h"
#include "config/secrets.h"
#include "net/http_client.h"
#include "providers/adapter.h"
#include "providers/vendor_call.h"

namespace payorch::providers::adyen {

class AdyenAdapter final : public Adapter {
public:
  // `client` must outlive the adapter. Results are delivered on `ex`. Requests in flight keep
  // what they need, so the adapter may be destroyed before they finish.
  AdyenAdapter(const config::Provider& provider, boost::asio::any_io_executor ex,
               net::HttpClient& client);

  void submit(const ChargeRequest& req, ResultHandler done) override;
  void query(const ChargeRequest& req, ResultHandler done) override;
  bool supports_query() const override { return false; }
  bool supports_refunds() const override { return true; }
  void refund(const RefundRequest& req, ResultHandler done) override;
  void query_refund(const RefundRequest& req, ResultHandler done) override;
  bool supports_fence() const override { return true; }
  void fence(const ChargeRequest& req, ResultHandler done) override;
  CallbackCheck verify_and_parse(const std::map<std::string, std::string>& headers,
                                 const std::string& body, std::int64_t now_unix_s) const override;

private:
  // A POST of `body` to base_url + path with `idempotency_key`.
  net::Request post(std::string path, const std::string& idempotency_key, std::string body) const;
  void send(net::Request http, Classify classify, ResultHandler done);
  void unsupported(std::string what, ResultHandler done);

  const std::string base_url_;  // without a trailing slash
  const config::ProviderSecrets secrets_;  // api key and HMAC key (hex), as they are now
  const std::string merchant_account_;
  const config::Millis connect_timeout_;
  const config::Millis request_timeout_;
  const boost::asio::any_io_executor ex_;
  net::HttpClient& client_;
};

}  // namespace payorch::providers::adyen
