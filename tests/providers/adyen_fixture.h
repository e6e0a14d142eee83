#pragma once
// An adyen adapter (built by make_adapter) talking to an in-process fake Checkout API.
#include <boost/json/object.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "config/config.h"
#include "http/problem.h"
#include "net/client_fixture.h"
#include "net/fake_server.h"
#include "providers/adapter.h"
#include "providers/registry.h"

namespace payorch::test {

// The HMAC key of Adyen's documentation example
// (https://docs.adyen.com/development-resources/webhooks/secure-webhooks/verify-hmac-signatures).
inline constexpr const char* adyen_hmac_key =
    "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056";
inline constexpr const char* adyen_merchant = "PayorchECOM";

inline providers::ChargeRequest adyen_charge() {
  return providers::ChargeRequest{"ck_01HZX3K8Q2M4N6P8R0T2V4W6Y8", 1250, "EUR", "acct_merchant_7",
                                  "shopper_42:8415718415172204"};
}

// A refund of adyen_charge(), whose pspReference is "PSP0000000000001".
inline providers::RefundRequest adyen_refund() {
  return providers::RefundRequest{"ck_01HZX3K8Q2M4N6P8R0T2V4W6RF", "PSP0000000000001",
                                  adyen_charge().client_key, 500, "EUR"};
}

// The PaymentResponse Adyen would answer for `req` with `result_code`.
inline boost::json::object adyen_payment_response(const providers::ChargeRequest& req,
                                                  std::string_view result_code) {
  boost::json::object r{{"pspReference", "PSP0000000000001"},
                        {"resultCode", result_code},
                        {"merchantReference", req.client_key},
                        {"amount", boost::json::object{{"value", req.amount_minor},
                                                       {"currency", req.currency}}}};
  if (result_code == "Refused") {
    r["refusalReason"] = "Not enough balance";
    r["refusalReasonCode"] = "12";
  }
  return r;
}

inline boost::json::object adyen_service_error(int status, std::string_view code,
                                               std::string_view type = "validation") {
  return boost::json::object{{"status", status},
                             {"errorCode", code},
                             {"message", "test error"},
                             {"errorType", type}};
}

inline FakeServer::Script adyen_answer(unsigned status, boost::json::value body) {
  return [status, body](const http::Request&) { return Reply::with(http::make_json(status, body)); };
}

class AdyenFixture {
public:
  explicit AdyenFixture(FakeServer::Script script)
      : server_(std::make_unique<FakeServer>(std::move(script))) {
    make(server_->base_url() + "/v71");
  }
  // No vendor at all: base_url points at a port nothing listens on.
  AdyenFixture() { make("http://127.0.0.1:" + std::to_string(unused_port()) + "/v71"); }

  template <class Start>
  providers::VendorResult call(Start start) {
    std::optional<providers::VendorResult> out;
    start([&out](providers::VendorResult r) { out = std::move(r); });
    client_.ioc.restart();
    client_.ioc.run();
    return out ? *out : providers::VendorResult{VendorOutcome::not_sent, {}, {}, {}, {}, 0,
                                                "handler never ran"};
  }
  providers::VendorResult submit(const providers::ChargeRequest& req = adyen_charge()) {
    return call([&](providers::ResultHandler done) { adapter_->submit(req, std::move(done)); });
  }
  providers::VendorResult refund(const providers::RefundRequest& req = adyen_refund()) {
    return call([&](providers::ResultHandler done) { adapter_->refund(req, std::move(done)); });
  }
  providers::VendorResult fence(const providers::ChargeRequest& req = adyen_charge()) {
    return call([&](providers::ResultHandler done) { adapter_->fence(req, std::move(done)); });
  }

  FakeServer& server() { return *server_; }
  providers::Adapter& adapter() { return *adapter_; }

private:
  void make(std::string base_url) {
    provider_.name = "adyen";
    provider_.adapter = "adyen";
    provider_.base_url = std::move(base_url);
    provider_.api_key = "AQE_test_key";
    provider_.timeouts.connect = std::chrono::milliseconds(500);
    provider_.contract.request_timeout = std::chrono::milliseconds(400);
    provider_.callback.secret = adyen_hmac_key;
    provider_.options.merchant_account = adyen_merchant;
    adapter_ = providers::make_adapter(provider_, client_.ioc.get_executor(), client_.client);
  }

  std::unique_ptr<FakeServer> server_;
  ClientFixture client_;
  config::Provider provider_;
  std::unique_ptr<providers::Adapter> adapter_;
};

}  // namespace payorch::test
