#pragma once
// The adapter for the sim vendor protocol (docs/contract.md §5): POST /v1/charges with the client_key as
// Idempotency-Key and reference, lookup by reference, signed callbacks; refunds the same way
// (POST /v1/refunds, GET /v1/refunds?reference=, §8). No fence: the protocol has no cancel.
#include <boost/asio/any_io_executor.hpp>

#include <functional>
#include <string>

#include "config/config.h"
#include "config/secrets.h"
#include "net/http_client.h"
#include "providers/adapter.h"
#include "providers/sim/callback.h"
#include "providers/vendor_call.h"

namespace payorch::providers::sim {

class SimAdapter final : public Adapter {
public:
  // `client` must outlive the adapter. Results are delivered on `ex`. Requests in flight keep
  // what they need, so the adapter may be destroyed before they finish.
  SimAdapter(const config::Provider& provider, boost::asio::any_io_executor ex,
             net::HttpClient& client);

  void submit(const ChargeRequest& req, ResultHandler done) override;
  void query(const ChargeRequest& req, ResultHandler done) override;
  bool supports_query() const override { return true; }
  bool supports_refunds() const override { return true; }
  void refund(const RefundRequest& req, ResultHandler done) override;
  void query_refund(const RefundRequest& req, ResultHandler done) override;
  CallbackCheck verify_and_parse(const std::map<std::string, std::string>& headers,
                                 const std::string& body, std::int64_t now_unix_s) const override;

private:
  net::Request vendor_request(std::string method, std::string path) const;
  // A POST of `body` with the client_key as Idempotency-Key.
  net::Request idempotent_post(std::string path, const std::string& client_key,
                               std::string body) const;
  // A GET of `path`?reference=<client_key>.
  net::Request lookup(const std::string& path, const std::string& client_key) const;
  void send(net::Request http, Classify classify, ResultHandler done);

  const std::string base_url_;  // without a trailing slash
  const config::ProviderSecrets secrets_;  // api key and callback secret, as they are now
  const config::Millis connect_timeout_;
  const config::Millis request_timeout_;
  const config::Millis callback_tolerance_;
  const boost::asio::any_io_executor ex_;
  net::HttpClient& client_;
};

}  // namespace payorch::providers::sim
