#pragma once
// The Alipay OpenAPI emulator (tests/emulators/alipay/server.js, run by Node) as a child process
// for payorch's tests, and a notification signer checked by alipay-sdk
// (tests/emulators/alipay/sign_notification.js). Both need `node` and the packages tools/deps
// installs (npm ci in tests/emulators). Keys: tests/emulators/alipay/keys (test-only).
#include <boost/json/value.hpp>

#include <cstdint>
#include <string>

#include "support/process.h"

namespace payorch::test {

inline constexpr const char* alipay_emulator_app_id = "2021000000000001";

// tests/emulators/alipay/keys/<name>, e.g. "app_private.pem".
std::string alipay_key_path(const std::string& name);
std::string alipay_key(const std::string& name);  // the file's contents

// emulator_missing (support/adyen_emulator.h) for the Alipay emulator, which needs alipay-sdk.
std::string alipay_emulator_missing();

// Runs sign_notification.js on `params_json` (a JSON object of notification parameters): the
// form body, signed with the emulator's Alipay key, that alipay-sdk's checkNotifySignV2
// accepts. Throws std::runtime_error with node's output on failure.
std::string sign_with_alipay_sdk(const std::string& params_json);

struct AlipayEmulatorOptions {
  int min_close_delay_ms = 0;  // a close of a younger trade is refused (Alipay documents none)
};

class AlipayEmulator {
public:
  explicit AlipayEmulator(AlipayEmulatorOptions options = {});
  ~AlipayEmulator();
  AlipayEmulator(const AlipayEmulator&) = delete;
  AlipayEmulator& operator=(const AlipayEmulator&) = delete;

  std::uint16_t port() const { return port_; }
  // What payorch's alipay provider takes as base_url.
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/gateway.do"; }

  // The buyer pays / scans (POST /_emu/pay, /_emu/scan); the HTTP status of the control.
  int pay(const std::string& out_trade_no) const;
  int scan(const std::string& out_trade_no) const;
  // count -1: every matching call; `method`: a regular expression the method must match.
  void set_fault(const std::string& mode, int count, int delay_ms = 0, const std::string& method = "");
  void clear_fault();
  void set_notify_url(const std::string& url);
  void set_notifications(bool duplicate, bool reorder, double retry_scale);
  void set_min_close_delay(int ms);
  boost::json::value ledger() const;
  std::string log_tail() const;

private:
  boost::json::value control(const std::string& method, const std::string& target,
                             const std::string& body, int* status = nullptr) const;

  AlipayEmulatorOptions options_;
  std::string dir_;
  ChildProcess process_;
  std::uint16_t port_ = 0;
};

}  // namespace payorch::test

// Tests that need the emulator start with this: skipped (with the reason) when node or
// alipay-sdk is missing, except under CI=true, where emulator_missing throws.
#define PAYORCH_NEED_ALIPAY_EMULATOR()                                                   \
  if (const std::string missing = payorch::test::alipay_emulator_missing(); !missing.empty()) { \
    MESSAGE("skipped: " << missing);                                                     \
    return;                                                                              \
  }
