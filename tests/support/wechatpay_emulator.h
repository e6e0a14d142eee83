#pragma once
// The WeChat Pay API v3 emulator (tests/emulators/wechatpay/server.js, run by Node) as a child
// process for payorch's tests, its test keys (tests/emulators/wechatpay/keys/, test-only), and
// wechatpay-axios-plugin's notification builder (tests/emulators/wechatpay/sign_notification.js).
#include <boost/json/value.hpp>

#include <cstdint>
#include <map>
#include <string>

#include "config/config.h"
#include "support/process.h"
#include "support/vendor_sim.h"

namespace payorch::test {

inline constexpr const char* wechatpay_mchid = "1900000109";
inline constexpr const char* wechatpay_appid = "wxd678efh567hg6787";
inline constexpr const char* wechatpay_merchant_serial = "MERCHANT0SERIAL0TEST";
inline constexpr const char* wechatpay_platform_serial = "PLATFORM0SERIAL0TEST";

// The absolute path of a file in tests/emulators/wechatpay/keys/ and its contents.
std::string wechatpay_key_path(const std::string& name);
std::string wechatpay_key(const std::string& name);

// emulator_missing (support/adyen_emulator.h) for the WeChat Pay emulator, whose test and
// notification builder need wechatpay-axios-plugin.
std::string wechatpay_emulator_missing();

// A wechatpay provider for `base_url` with the test keys: mchid, appid, serials, product,
// notify_url, a 1.5 s request timeout, 5 minutes of callback tolerance.
config::Provider wechatpay_test_provider(const std::string& base_url, const std::string& product = "native");

// A notification built by sign_notification.js: lower-case Wechatpay-* headers and the body.
struct SignedNotification {
  std::map<std::string, std::string> headers;
  std::string body;
};
// `timestamp` 0: now. Throws std::runtime_error with node's output on failure.
SignedNotification notification_from_library(const std::string& event_type, const std::string& resource_json,
                                             std::int64_t timestamp = 0);

struct WechatpayEmulatorOptions {
  std::int64_t close_min_delay_ms = 0;  // the vendor's is 300000 (5 minutes)
  int refund_delay_ms = 100;            // a refund is settled this much later
  double notify_scale = 0.001;          // the retry schedule times this
};

class WechatpayEmulator {
public:
  explicit WechatpayEmulator(WechatpayEmulatorOptions options = {});
  ~WechatpayEmulator();
  WechatpayEmulator(const WechatpayEmulator&) = delete;
  WechatpayEmulator& operator=(const WechatpayEmulator&) = delete;

  std::uint16_t port() const { return port_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // The control endpoints of server.js; each throws unless answered 200 (pay: unless `expect`).
  unsigned pay(const std::string& out_trade_no);  // the HTTP status (409 for a closed order)
  void refund_outcome(const std::string& out_refund_no, const std::string& status);
  void settings(const std::string& json_object);
  void set_fault(const std::string& mode, int count, int delay_ms = 0, const std::string& path = "");
  void set_notify_url(const std::string& url);
  boost::json::value ledger() const;
  boost::json::value schema_problems() const;
  std::string log_tail() const;

private:
  boost::json::value control(const std::string& method, const std::string& target, const std::string& body,
                             unsigned* status = nullptr) const;

  WechatpayEmulatorOptions options_;
  std::string dir_;
  ChildProcess process_;
  std::uint16_t port_ = 0;
};

}  // namespace payorch::test
