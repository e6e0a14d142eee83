#pragma once
// The adapter for WeChat Pay API v3, direct merchants (docs/contract.md §9, docs/vendors.md
// "WeChat Pay"). Products (providers[].options.product):
//   native, jsapi  POST /v3/pay/transactions/{native,jsapi} creates an order that waits for
//                  the user (pending); the fence is POST …/out-trade-no/{out_trade_no}/close.
//   codepay        POST /v3/pay/transactions/codepay charges the payer's auth code at once
//                  (SUCCESS) or waits for the user's confirmation (USERPAYING). It has no
//                  fence: its documented cancel, POST …/{out_trade_no}/reverse, refunds a paid
//                  order, so it is not a fence and is not built.
// out_trade_no = the charge's client_key; query GET …/out-trade-no/{out_trade_no}?mchid=;
// refunds POST /v3/refund/domestic/refunds with out_refund_no = the refund's client_key (the
// order's total, which the refund must name, is read first with the query), and
// GET /v3/refund/domestic/refunds/{out_refund_no}. Every request is signed with the merchant's
// key (Authorization WECHATPAY2-SHA256-RSA2048); every answer must verify under the platform
// key with the configured platform serial, or it is ambiguous. Callbacks: notification.h.
#include <boost/asio/any_io_executor.hpp>

#include <memory>
#include <string>

#include "config/config.h"
#include "net/http_client.h"
#include "providers/adapter.h"
#include "providers/vendor_call.h"

namespace payorch::providers::wechatpay {

struct Settings;

class WechatpayAdapter final : public Adapter {
public:
  // `client` must outlive the adapter. Results are delivered on `ex`. Requests in flight keep
  // what they need, so the adapter may be destroyed before they finish.
  WechatpayAdapter(const config::Provider& provider, boost::asio::any_io_executor ex, net::HttpClient& client);

  void submit(const ChargeRequest& req, ResultHandler done) override;
  void query(const ChargeRequest& req, ResultHandler done) override;
  bool supports_query() const override { return true; }
  bool supports_refunds() const override { return true; }
  void refund(const RefundRequest& req, ResultHandler done) override;
  void query_refund(const RefundRequest& req, ResultHandler done) override;
  // native and jsapi close their orders; codepay has no fence (see above).
  bool supports_fence() const override;
  void fence(const ChargeRequest& req, ResultHandler done) override;
  CallbackCheck verify_and_parse(const std::map<std::string, std::string>& headers, const std::string& body,
                                 std::int64_t now_unix_s) const override;

private:
  void finish(VendorResult result, ResultHandler done);

  std::shared_ptr<const Settings> settings_;
  const boost::asio::any_io_executor ex_;
  net::HttpClient& client_;
};

}  // namespace payorch::providers::wechatpay
