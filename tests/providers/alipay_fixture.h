#pragma once
// An alipay adapter (built by make_adapter) talking to the Alipay emulator
// (tests/emulators/alipay) through the HTTP client, with the emulator's test keys.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "config/config.h"
#include "providers/adapter.h"
#include "providers/adapter_driver.h"
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

class AlipayFixture : public AdapterDriver {
public:
  explicit AlipayFixture(AlipayFixtureOptions options = {})
      : emulator_(std::make_unique<AlipayEmulator>(options.emulator)) {
    config::Provider p;
    p.name = "alipay";
    p.adapter = "alipay";
    p.base_url = options.no_vendor ? "http://127.0.0.1:" + std::to_string(unused_port()) + "/gateway.do"
                                   : emulator_->base_url();
    p.timeouts.connect = std::chrono::milliseconds(500);
    p.contract.request_timeout = std::chrono::milliseconds(800);
    p.options.app_id = alipay_emulator_app_id;
    p.options.private_key = alipay_key(options.app_private_key);
    p.options.alipay_public_key = alipay_key(options.alipay_public_key);
    p.options.product = options.product;
    p.options.notify_url = "http://127.0.0.1:9/v1/callbacks/alipay";
    make(std::move(p));
  }

  AlipayEmulator& emulator() { return *emulator_; }

private:
  std::unique_ptr<AlipayEmulator> emulator_;
};

}  // namespace payorch::test
