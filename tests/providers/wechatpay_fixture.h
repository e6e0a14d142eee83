#pragma once
// A wechatpay adapter (built by make_adapter) talking to the WeChat Pay emulator
// (support/wechatpay_emulator.h), run from the test thread.
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "config/config.h"
#include "providers/adapter.h"
#include "providers/adapter_driver.h"
#include "support/wechatpay_emulator.h"

// Without node or wechatpay-axios-plugin a test says so and returns, except under CI=true,
// where wechatpay_emulator_missing() throws: CI never skips.
#define WECHATPAY_EMULATOR_OR_RETURN()                                                           \
  do {                                                                                           \
    if (const std::string missing_ = payorch::test::wechatpay_emulator_missing(); !missing_.empty()) { \
      MESSAGE("skipped: " << missing_);                                                          \
      return;                                                                                    \
    }                                                                                            \
  } while (false)

namespace payorch::test {

// A charge with a client_key of its own ("ck_<tag>_<n>", at most 32 characters).
inline providers::ChargeRequest wechatpay_charge(const std::string& tag, std::int64_t amount = 1200,
                                                 const std::string& source = "o_user_openid") {
  static std::atomic<int> n{0};
  const std::string key = ("ck_" + tag + "_" + std::to_string(++n) + "_" +
                           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count() % 100000));
  return providers::ChargeRequest{key.substr(0, 32), amount, "CNY", "payorch test order", source};
}

class WechatpayFixture : public AdapterDriver {
public:
  explicit WechatpayFixture(WechatpayEmulatorOptions options = {}, const std::string& product = "native")
      : emulator_(std::make_unique<WechatpayEmulator>(options)) {
    make(wechatpay_test_provider(emulator_->base_url(), product));
  }
  // An adapter configured by `edit` (wrong keys, serials, …) against a fresh emulator.
  template <class Edit>
  WechatpayFixture(WechatpayEmulatorOptions options, const std::string& product, Edit edit)
      : emulator_(std::make_unique<WechatpayEmulator>(options)) {
    config::Provider p = wechatpay_test_provider(emulator_->base_url(), product);
    edit(p);
    make(std::move(p));
  }

  WechatpayEmulator& emulator() { return *emulator_; }

private:
  std::unique_ptr<WechatpayEmulator> emulator_;
};

}  // namespace payorch::test
