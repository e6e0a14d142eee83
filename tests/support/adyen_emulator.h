#pragma once
// The Adyen Checkout API emulator (tests/emulators/adyen/server.js, run by Node) as a child
// process for payorch's tests, and @adyen/api-library's webhook signer
// (tests/emulators/adyen/sign_notification.js). Both need `node` on PATH and the packages
// tools/deps installs (npm ci in tests/emulators).
#include <boost/json/value.hpp>

#include <cstdint>
#include <string>

#include "support/process.h"
#include "support/vendor_sim.h"

namespace payorch::test {

inline constexpr const char* adyen_emulator_api_key = "AQE_emulator_test_key";
inline constexpr const char* adyen_emulator_hmac_key =
    "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056";
inline constexpr const char* adyen_emulator_merchant = "PayorchECOM";

// The absolute path of the `node` CMake found, "" when there is none.
std::string node_binary();
// "" when node and, unless `package` is "", tests/emulators/node_modules/<package> are there;
// otherwise what is missing (a test then skips with that message). With CI=true a missing one
// throws instead, naming `emulator`: CI never skips silently.
std::string emulator_missing(const std::string& emulator, const std::string& package);
// emulator_missing for the Adyen emulator, which needs @adyen/api-library.
std::string adyen_emulator_missing();

// Runs sign_notification.js: a notification {"live":"false","notificationItems":[…]} of
// `items_json` (a JSON array of NotificationRequestItem), each signed by the library's
// HmacValidator with `hex_key`. Throws std::runtime_error with node's output on failure.
std::string sign_with_adyen_library(const std::string& hex_key, const std::string& items_json);

struct AdyenEmulatorOptions {
  std::uint16_t port = 0;   // 0: a free port (restart() keeps the one it got)
  std::string webhook_url = {};  // "": none until set_webhook_url
  int received_delay_ms = 300;  // a payment answered Received is authorised this much later
                                // (unless cancelled meanwhile)
};

class AdyenEmulator;

// payorchd's provider `adyen` against `emulator`: adapter adyen, its key, HMAC key and merchant
// account, a 1.5 s request timeout, 7 days of key retention, recovery by replay. Callers change
// what their test is about (retry, contract, timeouts).
SimProviderConfig adyen_provider(const AdyenEmulator& emulator);

class AdyenEmulator {
public:
  // Starts the emulator (plain HTTP) on a fresh temp dir and ledger.
  explicit AdyenEmulator(AdyenEmulatorOptions options = {});
  // SIGTERMs the emulator; removes the temp dir (unless PAYORCH_KEEP_TEST_DIRS).
  ~AdyenEmulator();
  AdyenEmulator(const AdyenEmulator&) = delete;
  AdyenEmulator& operator=(const AdyenEmulator&) = delete;

  // kill -9, then the emulator again on the same ledger, port and arguments: payments still
  // Received get authorised, undelivered webhooks go out (server.js). A webhook_url set
  // through set_webhook_url is lost: the options' is used again.
  void restart();
  bool running();

  std::uint16_t port() const { return port_; }
  // What payorch's adyen provider takes as base_url.
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v71"; }

  // POST /_emu/webhook_url, /_emu/faults, /_emu/switches; GET /_emu/ledger.
  void set_webhook_url(const std::string& url);
  // count -1: every matching request; `path`: a regular expression the request path must
  // match ("" : any), e.g. "/payments$".
  void set_fault(const std::string& mode, int count, int delay_ms = 0, const std::string& path = "");
  void clear_fault();  // mode null
  void set_switches(bool duplicate_webhooks, bool reorder_webhooks);
  boost::json::value ledger() const;
  std::string log_tail() const;

private:
  boost::json::value control(const std::string& method, const std::string& target,
                             const std::string& body = "") const;

  void start();

  AdyenEmulatorOptions options_;
  std::string dir_;
  ChildProcess process_;
  std::uint16_t port_ = 0;
};

}  // namespace payorch::test
