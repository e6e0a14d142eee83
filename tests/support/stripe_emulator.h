#pragma once
// Runs the Stripe emulator (tests/emulators/stripe/server.js, on Node) as a child process: a
// fresh temp dir holding its ledger (JSON lines), its log and its port file; a free port (or
// the one given); webhooks to `webhook_url` when given. A payorchd provider points at it with vendor_sim.h's
// SimProviderConfig and adapter "stripe".
#include <boost/json/object.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "support/http_client.h"
#include "support/process.h"

namespace payorch::test {

inline constexpr const char* stripe_emulator_api_key = "sk_test_payorch";
inline constexpr const char* stripe_emulator_webhook_secret = "whsec_payorch";

class StripeEmulator {
public:
  // `webhook_url` "" sends no webhooks; `action_delay_ms` is how long a requires_action intent
  // waits before it succeeds (0: only when the control API says so). Throws with the log tail
  // if it does not come up within 10 s. `port` 0: a free one (restart() keeps the one it got).
  explicit StripeEmulator(std::string webhook_url = {}, int action_delay_ms = 300, std::uint16_t port = 0);
  ~StripeEmulator();
  StripeEmulator(const StripeEmulator&) = delete;
  StripeEmulator& operator=(const StripeEmulator&) = delete;

  // kill -9, then the emulator again on the same ledger, port and arguments (server.js reloads
  // its ledger at start). What it held only in memory is lost: webhooks not yet acknowledged,
  // and the later success of intents in requires_action. A webhook_url set through faults()
  // is lost too: the constructor's is used again.
  void restart();
  bool running();

  std::uint16_t port() const { return port_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string log_tail(std::size_t max_bytes = 4096) const;

  // POST /_emu/faults with `body` ({"mode","count","delay_ms"} and/or the webhook switches,
  // {"webhook_url"} for a receiver started after the emulator).
  // Throws unless the emulator answers 200.
  void faults(const boost::json::object& body) const;
  // GET /_emu/ledger: {"payment_intents":[…],"refunds":[…],"events":[…],…}.
  boost::json::object ledger() const;
  // True when no webhook is in flight and every event of the ledger has been acknowledged with
  // a 2xx (the tracked ones recorded, the others verified and acknowledged). Deliveries are
  // counted in the emulator's memory: after a restart this holds only once as many new
  // deliveries as events in the whole ledger were acknowledged.
  bool webhooks_acknowledged() const;
  // The PaymentIntents whose metadata.client_key is `client_key`.
  std::vector<boost::json::object> payment_intents(std::string_view client_key) const;
  std::vector<boost::json::object> refunds(std::string_view client_key) const;

private:
  void start();

  std::string webhook_url_;
  int action_delay_ms_ = 0;
  std::string dir_;
  ChildProcess process_;
  std::uint16_t port_ = 0;
};

// "" when node is there; otherwise what is missing (emulator_missing, support/adyen_emulator.h:
// with CI=true it throws instead).
std::string stripe_emulator_missing();

// Runs `script` with Node in tests/emulators (where Stripe's library is installed) and returns
// its output; throws unless it exits 0.
std::string run_node(const std::string& script);

}  // namespace payorch::test
