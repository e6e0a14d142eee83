#pragma once
// The adapter for Alipay OpenAPI (docs/contract.md §9, docs/vendors.md "alipay"): every call a
// signed form POST to the gateway (base_url, e.g. https://openapi.alipay.com/gateway.do; see
// gateway.h), out_trade_no = client_key. Products (options.product): `pay`
// (alipay.trade.pay, server-side barcode: the intent's source is the buyer's auth_code) or
// `precreate` (alipay.trade.precreate: a QR code the buyer pays later). Recovery asks
// alipay.trade.query by out_trade_no; the vendor-side fence is alipay.trade.close (never
// alipay.trade.cancel, which refunds a paid trade); refunds are alipay.trade.refund with
// out_request_no = the refund's client_key, asked about with alipay.trade.fastpay.refund.query.
// Notifications: notification.h. What each answer means: classify.h.
#include <boost/asio/any_io_executor.hpp>

#include <string>

#include "config/config.h"
#include "config/secrets.h"
#include "net/http_client.h"
#include "providers/adapter.h"
#include "providers/alipay/classify.h"
#include "providers/vendor_call.h"

namespace payorch::providers::alipay {

class AlipayAdapter final : public Adapter {
public:
  // `client` must outlive the adapter. Results are delivered on `ex`.
  AlipayAdapter(const config::Provider& provider, boost::asio::any_io_executor ex,
                net::HttpClient& client);

  void submit(const ChargeRequest& req, ResultHandler done) override;
  void query(const ChargeRequest& req, ResultHandler done) override;
  bool supports_query() const override { return true; }
  bool supports_refunds() const override { return true; }
  void refund(const RefundRequest& req, ResultHandler done) override;
  void query_refund(const RefundRequest& req, ResultHandler done) override;
  bool supports_fence() const override { return true; }
  void fence(const ChargeRequest& req, ResultHandler done) override;
  CallbackCheck verify_and_parse(const std::map<std::string, std::string>& headers,
                                 const std::string& body, std::int64_t now_unix_s) const override;

  // The signed gateway request for `method` with `biz_content` (JSON text), sent at `unix_s`;
  // nullopt when the private key cannot sign. Public for tests.
  std::optional<net::Request> gateway_request(const std::string& method, const std::string& biz_content,
                                              bool with_notify_url, std::int64_t unix_s) const;

private:
  void call(const std::string& method, const std::string& biz_content, bool with_notify_url,
            Classify classify, ResultHandler done);

  const std::string base_url_;
  const std::string app_id_;
  // The key the alipay answers and notifications are verified with, as it is now.
  std::string alipay_public_key() const;

  // private_key and alipay_public_key, read per call: a reload (SIGHUP) that rotates them
  // applies to the next request and notification.
  const config::ProviderSecrets secrets_;
  const Product product_;
  // precreate: the QR code's and its order's expiry, as Alipay writes it ("120m").
  const std::string order_expiry_;
  const std::string notify_url_;
  const config::Millis connect_timeout_;
  const config::Millis request_timeout_;
  const boost::asio::any_io_executor ex_;
  net::HttpClient& client_;
};

}  // namespace payorch::providers::alipay
