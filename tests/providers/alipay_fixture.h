#pragma once
// An alipay adapter (built by make_adapter) talking to the Alipay emulator
// (tests/emulators/alipay) through the HTTP client, with the emulator's test keys.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "config/config.h"
#include "net/client_fixture.h"
#include "providers/adapter.h"
#include "providers/registry.h"
#include "support/alipay_emulator.h"
#include "net/fake_server.h"

namespace payorch::test {

// A charge of 12.34 CNY whose source is a buyer who pays at once (emulator: auth_code ending 1).
inline providers::ChargeRequest alipay_charge(std::string client_key = "ck_01HZX3K8Q2M4N6P8R0T2V4W6Y8",
                                              std::string auth_code = "28763443825664391") {
  return providers::ChargeRequest{std::move(client_key), 1234, "CNY", "payorch test order", std::move(auth_code)};
}

inline providers::RefundRequest alipay_refund(const providers::ChargeRequest& charge, std::string client_key,
                                              std::int64_t amount_minor) {
  return providers::RefundRequest{std::move(client_key), "", charge.client_key, amount_minor, "CNY"};
}

struct AlipayFixtureOptions {
  std::string product = "pay";
  std::string alipay_public_key = "alipay_public.pem";  // which key file checks the answers
  std::string app_private_key = "app_private.pem";      // which key file signs the requests
  bool no_vendor = false;                                // base_url: a port nothing listens on
  AlipayEmulatorOptions emulator = {};
};

class AlipayFixture {
public:
  explicit AlipayFixture(AlipayFixtureOptions options = {})
      : emulator_(std::make_unique<AlipayEmulator>(options.emulator)) {
    provider_.name = "alipay";
    provider_.adapter = "alipay";
    provider_.base_url = options.no_vendor ? "http://127.0.0.1:" + std::to_string(unused_port()) + "/gateway.do"
                                           : emulator_->base_url();
    provider_.timeouts.connect = std::chrono::milliseconds(500);
    provider_.contract.request_timeout = std::chrono::milliseconds(800);
    provider_.options.app_id = alipay_emulator_app_id;
    provider_.options.private_key = alipay_key(options.app_private_key);
    provider_.options.alipay_public_key = alipay_key(options.alipay_public_key);
    provider_.options.product = options.product;
    provider_.options.notify_url = "http://127.0.0.1:9/v1/callbacks/alipay";
    adapter_ = providers::make_adapter(provider_, client_.ioc.get_executor(), client_.client);
  }

  template <class Start>
  providers::VendorResult call(Start start) {
    std::optional<providers::VendorResult> out;
    start([&out](providers::VendorResult r) { out = std::move(r); });
    client_.ioc.restart();
    client_.ioc.run();
    return out ? *out : providers::VendorResult{VendorOutcome::not_sent, {}, {}, {}, {}, 0, "handler never ran"};
  }
  providers::VendorResult submit(const providers::ChargeRequest& req) {
    return call([&](providers::ResultHandler done) { adapter_->submit(req, std::move(done)); });
  }
  providers::VendorResult query(const providers::ChargeRequest& req) {
    return call([&](providers::ResultHandler done) { adapter_->query(req, std::move(done)); });
  }
  providers::VendorResult fence(const providers::ChargeRequest& req) {
    return call([&](providers::ResultHandler done) { adapter_->fence(req, std::move(done)); });
  }
  providers::VendorResult refund(const providers::RefundRequest& req) {
    return call([&](providers::ResultHandler done) { adapter_->refund(req, std::move(done)); });
  }
  providers::VendorResult query_refund(const providers::RefundRequest& req) {
    return call([&](providers::ResultHandler done) { adapter_->query_refund(req, std::move(done)); });
  }

  AlipayEmulator& emulator() { return *emulator_; }
  providers::Adapter& adapter() { return *adapter_; }

private:
  std::unique_ptr<AlipayEmulator> emulator_;
  ClientFixture client_;
  config::Provider provider_;
  std::unique_ptr<providers::Adapter> adapter_;
};

// Tests that need the emulator start with this: skipped (with the reason) when node or
// alipay-sdk is missing, except under CI=true, where emulator_missing throws.
#define PAYORCH_NEED_ALIPAY_EMULATOR()                                                   \
  if (const std::string missing = payorch::test::alipay_emulator_missing(); !missing.empty()) { \
    MESSAGE("skipped: " << missing);                                                     \
    return;                                                                              \
  }

}  // namespace payorch::test
